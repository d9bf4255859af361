package testenv

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"sigs.k8s.io/yaml"
)

// PrometheusBinary is the Prometheus server `make prometheus` builds into
// bin/prometheus (hack/build-tool.sh, from the Go module proxy), or
// the one $PROMETHEUS names.
func PrometheusBinary() string {
	return toolBinary("PROMETHEUS", "prometheus")
}

// ScrapeTarget is one endpoint Prometheus scrapes.
type ScrapeTarget struct {
	// Address is host:port.
	Address string
	// MetricsPath is the path scraped; empty is /metrics.
	MetricsPath string
	// Labels are target labels, attached to every series scraped from it
	// (with HonorLabels, only where the series lacks the label).
	Labels map[string]string
}

// ScrapeJob is one scrape configuration: a job and its static targets.
type ScrapeJob struct {
	// Name is the job's name, hence its series' job label.
	Name string
	// HonorLabels keeps the scraped series' labels where they clash with
	// the target's, as a ServiceMonitor's honorLabels does.
	HonorLabels bool
	// Targets are scraped at the server's scrape interval. A job may have
	// none (a Prometheus that has lost every target of the job).
	Targets []ScrapeTarget
}

// PrometheusOptions configure StartPrometheus.
type PrometheusOptions struct {
	// ScrapeInterval is how often every target is scraped (and rules
	// evaluated); zero is 1 s. The scrape timeout is the interval.
	ScrapeInterval time.Duration
	// Jobs are the scrape jobs; SetJobs replaces them on a running server.
	Jobs []ScrapeJob
	// StartTimeout bounds the wait for /-/ready; zero is a minute.
	StartTimeout time.Duration
	// RuleFiles are Prometheus rule files (recording and alerting rules)
	// the server evaluates at the scrape interval.
	RuleFiles []string
	// ExternalLabels are the server's external labels, which a Thanos
	// sidecar in front of it requires and attaches to every series it
	// serves.
	ExternalLabels map[string]string
	// Alertmanagers are the host:port of the Alertmanagers the server
	// sends its firing alerts to (Alertmanager.Address), at once and then
	// again every scrape interval while they fire.
	Alertmanagers []string
}

// Prometheus is a real Prometheus server started by StartPrometheus, with
// its configuration and TSDB in a temporary directory, listening on a free
// local port.
type Prometheus struct {
	// URL is the server's base URL, http://127.0.0.1:<port>.
	URL string

	daemon
	interval time.Duration
	rules    []string
	external map[string]string
	alerting []string
	mu       sync.Mutex // serializes SetJobs
}

// StartPrometheus starts bin/prometheus with a configuration generated from
// opts, the lifecycle API enabled (for SetJobs' reload) and its TSDB in a
// temporary directory, and returns once /-/ready answers 200. A missing
// binary is an error that says how to build it.
func StartPrometheus(opts PrometheusOptions) (*Prometheus, error) {
	p := &Prometheus{daemon: daemon{name: "prometheus"}, interval: opts.ScrapeInterval, rules: opts.RuleFiles, external: opts.ExternalLabels, alerting: opts.Alertmanagers}
	if p.interval <= 0 {
		p.interval = time.Second
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	err := p.launch(PrometheusBinary(), "run `make prometheus` (which builds it from the Go module proxy) or set PROMETHEUS", timeout, func(dir string) ([]string, string, error) {
		if err := p.writeConfig(opts.Jobs); err != nil {
			return nil, "", err
		}
		addr, err := freeLocalAddress()
		if err != nil {
			return nil, "", err
		}
		p.URL = "http://" + addr
		return []string{
			"--config.file=" + p.configPath(),
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			"--web.enable-lifecycle",
			"--log.level=warn",
			// The scrape manager applies new targets (at start and after a
			// reload) on a 5 s tick by default: a test would wait that long
			// for its first sample. The flag is hidden but supported.
			"--scrape.discovery-reload-interval=100ms",
			// A firing alert is sent again every minute by default; the
			// scrape interval keeps Alertmanager's view as fresh as the
			// rules'.
			"--rules.alert.resend-delay=" + p.interval.String(),
		}, p.URL + "/-/ready", nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// freeLocalAddress finds a free port on the loopback interface. The port is
// released before the daemon binds it; another process taking it meanwhile
// makes the start fail, with the daemon's log saying so.
func freeLocalAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (p *Prometheus) configPath() string { return filepath.Join(p.dir, "prometheus.yml") }

// promConfig is the subset of Prometheus' configuration file we write.
type promConfig struct {
	Global        promGlobal         `json:"global"`
	RuleFiles     []string           `json:"rule_files,omitempty"`
	ScrapeConfigs []promScrapeConfig `json:"scrape_configs"`
	Alerting      *promAlerting      `json:"alerting,omitempty"`
}

type promAlerting struct {
	Alertmanagers []promAlertmanagerConfig `json:"alertmanagers"`
}

type promAlertmanagerConfig struct {
	StaticConfigs []promStaticConfig `json:"static_configs"`
}

type promGlobal struct {
	ScrapeInterval     string            `json:"scrape_interval"`
	ScrapeTimeout      string            `json:"scrape_timeout"`
	EvaluationInterval string            `json:"evaluation_interval"`
	ExternalLabels     map[string]string `json:"external_labels,omitempty"`
}

type promScrapeConfig struct {
	JobName       string             `json:"job_name"`
	HonorLabels   bool               `json:"honor_labels"`
	StaticConfigs []promStaticConfig `json:"static_configs"`
}

type promStaticConfig struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// writeConfig writes the configuration file for jobs. A target's metrics
// path goes into its __metrics_path__ label, so targets of one job may have
// different paths (one listener serving several nodes' endpoints).
func (p *Prometheus) writeConfig(jobs []ScrapeJob) error {
	iv := p.interval.String()
	cfg := promConfig{Global: promGlobal{ScrapeInterval: iv, ScrapeTimeout: iv, EvaluationInterval: iv, ExternalLabels: p.external}, RuleFiles: p.rules}
	if len(p.alerting) > 0 {
		cfg.Alerting = &promAlerting{Alertmanagers: []promAlertmanagerConfig{{StaticConfigs: []promStaticConfig{{Targets: p.alerting}}}}}
	}
	for _, j := range jobs {
		sc := promScrapeConfig{JobName: j.Name, HonorLabels: j.HonorLabels, StaticConfigs: []promStaticConfig{}}
		for _, t := range j.Targets {
			labels := maps.Clone(t.Labels)
			if t.MetricsPath != "" {
				if labels == nil {
					labels = map[string]string{}
				}
				labels["__metrics_path__"] = t.MetricsPath
			}
			sc.StaticConfigs = append(sc.StaticConfigs, promStaticConfig{Targets: []string{t.Address}, Labels: labels})
		}
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, sc)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	// Write and rename, so a reload never reads half a file.
	tmp := p.configPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p.configPath())
}

// SetJobs replaces the scrape jobs: it rewrites the configuration and has
// the server reload it (POST /-/reload). Targets no longer listed stop
// being scraped and their series go stale, as when a node's virt-handler
// pod leaves the Service's endpoints.
func (p *Prometheus) SetJobs(ctx context.Context, jobs []ScrapeJob) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.writeConfig(jobs); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reloading prometheus: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reloading prometheus: %s:\n%s", resp.Status, p.Log())
	}
	return nil
}

// API is a client of the server's HTTP API (/api/v1/query and the rest).
func (p *Prometheus) API() promv1.API {
	c, err := promapi.NewClient(promapi.Config{Address: p.URL})
	if err != nil {
		// NewClient fails only on an unparsable address; ours is built
		// from a listener's.
		panic(err)
	}
	return promv1.NewAPI(c)
}
