package packaging

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// PromQL words that are no metric name: aggregations (which may be
// followed by `by (...)` before their parenthesis), binary operators and
// literals. A word followed by `(` is a function.
var (
	promqlAggregations = words("sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio")
	promqlKeywords     = words("and or unless bool offset start end atan2 inf nan")
	// Followed by a list of label names in parentheses.
	promqlLabelLists = words("by without on ignoring group_left group_right")
)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// enforceLabel adds the matcher name="value" to every vector selector of
// expr, as prometheus-operator's enforcedNamespaceLabel does to the rules
// of a PrometheusRule (pkg/namespacelabeler, with prom-label-proxy's
// injectproxy): user-workload monitoring on OpenShift sets it to
// `namespace`, so a rule reads only the series of its own namespace. A
// selector that already matches on name is refused (the operator would
// replace the matcher silently: a rule of vmobs must not rely on it).
func enforceLabel(expr, name, value string) (string, error) {
	matcher := name + "=" + strconv.Quote(value)
	var b strings.Builder
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j, err := endOfString(expr, i)
			if err != nil {
				return "", err
			}
			b.WriteString(expr[i:j])
			i = j
		case c == '#':
			j := strings.IndexByte(expr[i:], '\n')
			if j < 0 {
				j = len(expr) - i
			}
			b.WriteString(expr[i : i+j])
			i += j
		case c == '{': // a selector without a metric name
			j, err := injectMatcher(&b, expr, i, name, matcher)
			if err != nil {
				return "", err
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			// A number or a duration (5m, 1e3, 0x1f).
			j := i
			for j < len(expr) && (isWordChar(expr[j]) || expr[j] == '.') {
				j++
			}
			b.WriteString(expr[i:j])
			i = j
		case isWordStart(c):
			j := i
			for j < len(expr) && (isWordChar(expr[j]) || expr[j] == ':') {
				j++
			}
			word := expr[i:j]
			b.WriteString(word)
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			next := byte(0)
			if k < len(expr) {
				next = expr[k]
			}
			i = j
			switch {
			case promqlLabelLists[word]:
				if next == '(' {
					end := strings.IndexByte(expr[k:], ')')
					if end < 0 {
						return "", fmt.Errorf("%q: unclosed label list after %s", expr, word)
					}
					b.WriteString(expr[j : k+end+1])
					i = k + end + 1
				}
			case promqlAggregations[word], promqlKeywords[word], next == '(':
			case next == '{':
				b.WriteString(expr[j:k])
				var err error
				if i, err = injectMatcher(&b, expr, k, name, matcher); err != nil {
					return "", err
				}
			default:
				b.WriteString("{" + matcher + "}")
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isWordChar(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' }

// endOfString is the index after the string literal that starts at i.
func endOfString(s string, i int) (int, error) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("%q: unterminated string at %d", s, i)
}

// injectMatcher writes the selector block that starts at s[i] == '{' with
// matcher first, and returns the index after the block.
func injectMatcher(b *strings.Builder, s string, i int, name, matcher string) (int, error) {
	j := i + 1
	for j < len(s) && s[j] != '}' {
		switch {
		case s[j] == '"' || s[j] == '\'' || s[j] == '`':
			end, err := endOfString(s, j)
			if err != nil {
				return 0, err
			}
			j = end
		case isWordStart(s[j]):
			k := j
			for k < len(s) && isWordChar(s[k]) {
				k++
			}
			if s[j:k] == name {
				return 0, fmt.Errorf("%q: a selector matches on %s itself", s, name)
			}
			j = k
		default:
			j++
		}
	}
	if j == len(s) {
		return 0, fmt.Errorf("%q: unclosed selector at %d", s, i)
	}
	inner := s[i+1 : j]
	if strings.TrimSpace(inner) == "" {
		b.WriteString("{" + matcher + "}")
	} else {
		b.WriteString("{" + matcher + "," + inner + "}")
	}
	return j + 1, nil
}

func TestEnforceLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`vmobs_verdict`, `vmobs_verdict{namespace="ns"}`},
		{`count by (verdict) (max by (exported_namespace, name, verdict) (vmobs_verdict))`,
			`count by (verdict) (max by (exported_namespace, name, verdict) (vmobs_verdict{namespace="ns"}))`},
		{`vmobs_verdict{node!=""}`, `vmobs_verdict{namespace="ns",node!=""}`},
		{`group by (exported_namespace, name) ({__name__=~"vmobs_layer_verdict|vmobs_layer_reason"})`,
			`group by (exported_namespace, name) ({namespace="ns",__name__=~"vmobs_layer_verdict|vmobs_layer_reason"})`},
		{`label_replace(a * on (n) group_left (incident) b:c:max, "vm", "$1", "name", "(.+)")`,
			`label_replace(a{namespace="ns"} * on (n) group_left (incident) b:c:max{namespace="ns"}, "vm", "$1", "name", "(.+)")`},
		{`(time() - max(x) > 300) or on() absent(x)`,
			`(time() - max(x{namespace="ns"}) > 300) or on() absent(x{namespace="ns"})`},
		{`rate(x{job="a"}[5m] offset 1m) unless ignoring(pod) y == bool 0`,
			`rate(x{namespace="ns",job="a"}[5m] offset 1m) unless ignoring(pod) y{namespace="ns"} == bool 0`},
		{`a unless on (exported_namespace, name, layer) b{reason=~"x|y"}`,
			`a{namespace="ns"} unless on (exported_namespace, name, layer) b{namespace="ns",reason=~"x|y"}`},
	} {
		got, err := enforceLabel(tc.in, "namespace", "ns")
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
		} else if got != tc.want {
			t.Errorf("enforceLabel(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{`up{namespace="x"}`, `up{job="x"`, `up{job="x}`} {
		if got, err := enforceLabel(bad, "namespace", "ns"); err == nil {
			t.Errorf("enforceLabel(%s) = %s, want an error", bad, got)
		}
	}
}
