package testenv

import (
	"os"
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
	a := &Alertmanager{daemon: daemon{name: "alertmanager"}}
	err := a.launch(AlertmanagerBinary(), "run `make alertmanager` (which builds it from the Go module proxy) or set ALERTMANAGER", time.Minute, func(dir string) ([]string, string, error) {
		cfg := filepath.Join(dir, "alertmanager.yml")
		if err := os.WriteFile(cfg, config, 0o600); err != nil {
			return nil, "", err
		}
		addr, err := freeLocalAddress()
		if err != nil {
			return nil, "", err
		}
		a.URL, a.Address = "http://"+addr, addr
		return []string{
			"--config.file=" + cfg,
			"--storage.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			// An empty address turns the gossip cluster off: one
			// Alertmanager, no port 9094 taken.
			"--cluster.listen-address=",
			"--log.level=warn",
		}, a.URL + "/-/ready", nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}
