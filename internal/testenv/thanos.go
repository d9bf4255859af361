package testenv

import (
	"fmt"
	"path/filepath"
	"time"
)

// ThanosBinary is the Thanos binary `make thanos` builds into bin/thanos
// (hack/build-tool.sh, from the Go module proxy), or the one $THANOS
// names.
func ThanosBinary() string {
	return toolBinary("THANOS", "thanos")
}

// ThanosReplicaLabel is the external label that tells Prometheus replicas
// apart, and the one StartThanosQuery deduplicates along: OpenShift's
// cluster monitoring runs thanos-querier with
// --query.replica-label=prometheus_replica in front of two Prometheus
// replicas.
const ThanosReplicaLabel = "prometheus_replica"

// Thanos is one Thanos component (`thanos sidecar` or `thanos query`)
// started by StartThanosSidecar or StartThanosQuery, listening on free
// local ports.
type Thanos struct {
	// URL is the component's HTTP base URL, http://127.0.0.1:<port>: the
	// query API (/api/v1/query) for the querier, /-/ready for both.
	URL string
	// GRPCAddress is host:port of its gRPC server (the StoreAPI).
	GRPCAddress string

	daemon
}

// StartThanosSidecar starts `thanos sidecar` in front of prom, which must
// carry external labels (PrometheusOptions.ExternalLabels): the sidecar
// refuses a Prometheus without them. It serves prom's samples over the
// StoreAPI and uploads nothing (no object storage). It returns once the
// sidecar is ready, that is once it has read prom's external labels.
func StartThanosSidecar(prom *Prometheus) (*Thanos, error) {
	return startThanos("sidecar", func(dir string) []string {
		return []string{
			"--prometheus.url=" + prom.URL,
			// Read only to upload blocks, which it does not do here.
			"--tsdb.path=" + filepath.Join(dir, "tsdb"),
		}
	})
}

// StartThanosQuery starts `thanos query` with the StoreAPIs at endpoints
// (gRPC host:port, such as a sidecar's GRPCAddress), deduplicating along
// ThanosReplicaLabel, and returns once it is ready: its first look at the
// endpoints is done, whether or not they answered.
func StartThanosQuery(endpoints ...string) (*Thanos, error) {
	// The endpoints go in --endpoint.sd-config: Thanos v0.42 deprecates
	// --endpoint (and --store before it), which older releases take.
	cfg := "endpoints:\n"
	for _, e := range endpoints {
		cfg += fmt.Sprintf("- address: %q\n", e)
	}
	return startThanos("query", func(string) []string {
		return []string{"--query.replica-label=" + ThanosReplicaLabel, "--endpoint.sd-config=" + cfg}
	})
}

// startThanos starts one component with its listen addresses, its log
// level and the arguments args returns for its temporary directory.
func startThanos(component string, args func(dir string) []string) (*Thanos, error) {
	th := &Thanos{daemon: daemon{name: "thanos " + component}}
	err := th.launch(ThanosBinary(), "run `make thanos` (which builds it from the Go module proxy) or set THANOS", time.Minute, func(dir string) ([]string, string, error) {
		httpAddr, err := freeLocalAddress()
		if err != nil {
			return nil, "", err
		}
		grpcAddr, err := freeLocalAddress()
		if err != nil {
			return nil, "", err
		}
		th.URL, th.GRPCAddress = "http://"+httpAddr, grpcAddr
		return append([]string{component,
			"--http-address=" + httpAddr,
			"--grpc-address=" + grpcAddr,
			"--log.level=warn",
		}, args(dir)...), th.URL + "/-/ready", nil
	})
	if err != nil {
		return nil, err
	}
	return th, nil
}
