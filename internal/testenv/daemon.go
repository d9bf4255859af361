package testenv

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// daemon is a server binary a test starts (Prometheus, a Thanos component):
// its process, its output and its temporary directory, which Stop removes.
type daemon struct {
	name    string // in errors: "prometheus", "thanos query"
	cmd     *exec.Cmd
	dir     string
	log     LockedBuffer
	exited  chan struct{}
	waitErr error
}

// start runs d.cmd with its output in d.log, and notes when it exits.
func (d *daemon) start() error {
	d.exited = make(chan struct{})
	d.cmd.Stdout, d.cmd.Stderr = &d.log, &d.log
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", d.name, err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	return nil
}

// launch starts the daemon from bin, the same way for every server a test
// runs: a missing bin is an error that says what to do (build: "run `make
// thanos` ..."); the daemon gets a temporary directory of its own, where
// setup writes what the daemon reads before returning its arguments and the
// URL that answers 200 once it is ready; launch returns once that URL does
// (waitHealthy, up to timeout). On an error nothing is left running and the
// directory is gone.
func (d *daemon) launch(bin, build string, timeout time.Duration, setup func(dir string) (args []string, readyURL string, err error)) error {
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s not found at %s: %s", d.name, bin, build)
	}
	dir, err := os.MkdirTemp("", "vmobs-"+strings.ReplaceAll(d.name, " ", "-")+"-")
	if err != nil {
		return err
	}
	d.dir = dir
	args, readyURL, err := setup(dir)
	if err == nil {
		d.cmd = exec.Command(bin, args...)
		err = d.start()
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	if err := d.waitHealthy(readyURL, timeout); err != nil {
		_ = d.Stop()
		return err
	}
	return nil
}

// waitHealthy polls url (a readiness endpoint: Prometheus' /-/ready,
// kube-controller-manager's /healthz) until it answers 200, the process
// exits or timeout passes; the errors carry the process's log. An https
// URL is a server on loopback with a certificate it made itself, which is
// not verified.
func (d *daemon) waitHealthy(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: strings.HasPrefix(url, "https://")}, //nolint:gosec // a self-signed server on loopback
	}}
	var last string
	for {
		select {
		case <-d.exited:
			return fmt.Errorf("%s exited before it was ready (%w):\n%s", d.name, d.waitErr, d.Log())
		default:
		}
		resp, err := c.Get(url)
		if err != nil {
			last = err.Error()
		} else {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s at %s not ready after %s (last: %s):\n%s", d.name, url, timeout, last, d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log is what the process has written.
func (d *daemon) Log() string { return d.log.String() }

// Stop stops the process (SIGTERM, then SIGKILL after 10 s) and removes
// its temporary directory.
func (d *daemon) Stop() error {
	defer os.RemoveAll(d.dir)
	select {
	case <-d.exited:
		return nil
	default:
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", d.name, err)
	}
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	return nil
}

// toolBinary is the third-party program `make <name>` builds into
// bin/<name> (hack/build-tool.sh, from the Go module proxy), or the one the
// environment variable env names.
func toolBinary(env, name string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	return filepath.Join(RepoRoot(), "bin", name)
}
