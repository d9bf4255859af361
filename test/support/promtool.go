package support

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// PromtoolTests is what the tests read of a `promtool test rules` file
// (config/prometheus/tests/alerts_test.yaml and the user-workload copy
// generated from it): the alerts each case expects, with their labels, and
// the samples each expression test expects.
type PromtoolTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `json:"exp_labels"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr       string `json:"expr"`
			ExpSamples []struct {
				Labels string `json:"labels"`
			} `json:"exp_samples"`
		} `json:"promql_expr_test"`
	} `json:"tests"`
}

// ReadPromtoolTests reads the promtool test file at path.
func ReadPromtoolTests(t testing.TB, path string) PromtoolTests {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out PromtoolTests
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
