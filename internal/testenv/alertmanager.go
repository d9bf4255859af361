package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// AlertmanagerBinary is the Alertmanager `make alertmanager` builds into
// bin/alertmanager (hack/build-tool.sh, from the Go module proxy), or the
// one $ALERTMANAGER names.
func AlertmanagerBinary() string {
	return toolBinary("ALERTMANAGER", "alertmanager")
}

// Alertmanager is a real Alertmanager started by StartAlertmanager, alone
// (no cluster peers), with its configuration and silences in a temporary
// directory, listening on a free local port.
type Alertmanager struct {
	// URL is the server's base URL, http://127.0.0.1:<port>; a
	// Prometheus reaches it through PrometheusOptions.Alertmanagers.
	URL string
	// Address is the host:port of URL.
	Address string

	daemon
}

// StartAlertmanager starts bin/alertmanager with config (an
// alertmanager.yml, as written) and returns once /-/ready answers 200. A
// missing binary is an error that says how to build it; a configuration
// Alertmanager rejects is an error carrying its log.
func StartAlertmanager(config []byte) (*Alertmanager, error) {
	bin := AlertmanagerBinary()
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("alertmanager not found at %s: run `make alertmanager` (which builds it from the Go module proxy) or set ALERTMANAGER", bin)
	}
	dir, err := os.MkdirTemp("", "vmobs-alertmanager-")
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, config, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	addr, err := freeLocalAddress()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	a := &Alertmanager{URL: "http://" + addr, Address: addr, daemon: daemon{name: "alertmanager", dir: dir}}
	a.cmd = exec.Command(bin,
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		// An empty address turns the gossip cluster off: one
		// Alertmanager, no port 9094 taken.
		"--cluster.listen-address=",
		"--log.level=warn",
	)
	if err := a.start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := a.waitReady(a.URL, time.Minute); err != nil {
		_ = a.Stop()
		return nil, err
	}
	return a, nil
}
