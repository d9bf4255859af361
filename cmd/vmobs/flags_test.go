package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/golden"
)

var update = flag.Bool("update", false, "rewrite docs/flags.md from the manager's flags")

// flagsReferencePath is the generated flags reference, from this package.
var flagsReferencePath = filepath.Join("..", "..", "docs", "flags.md")

// TestFlagsReference keeps docs/flags.md equal to what newManagerFlags
// defines: a flag added, renamed or given a new default or usage changes the
// page, and -update (make update-golden) rewrites it.
func TestFlagsReference(t *testing.T) {
	_, fs := newManagerFlags()
	golden.Check(t, flagsReferencePath, []byte(flagsReference(fs)), *update, "`go test ./cmd/vmobs -run TestFlagsReference -update` (make update-golden)")
}

// TestFlagsReferencePerVM checks the per-VM column against the API: every
// field of spec.policy is some flag's override, so a policy field renamed
// away from its flag's name cannot silently drop out of the page.
func TestFlagsReferencePerVM(t *testing.T) {
	_, fs := newManagerFlags()
	fields := policyFields()
	if len(fields) < 10 {
		t.Fatalf("spec.policy has %d fields; the json tags were not read", len(fields))
	}
	for _, field := range fields {
		found := false
		fs.VisitAll(func(f *flag.Flag) {
			found = found || policyOverride(f.Name, fields) == field
		})
		if !found {
			t.Errorf("spec.policy.%s matches no flag of vmobs manager (the flag is its name in kebab case)", field)
		}
	}
}

// flagsReference renders the flags of fs as docs/flags.md.
func flagsReference(fs *flag.FlagSet) string {
	fields := policyFields()
	var b strings.Builder
	b.WriteString("# `vmobs manager` flags\n\n")
	b.WriteString("<!-- Generated from the flags of cmd/vmobs/manager.go and the option groups' BindFlags (TestFlagsReference);\n")
	b.WriteString("     do not edit.\n")
	b.WriteString("     `make update-golden` rewrites it. -->\n\n")
	b.WriteString("`vmobs manager` runs the controller. It takes these flags on the command line (`make run ARGS=...`,\n")
	b.WriteString("the `args` of `config/manager/manager.yaml`) or through the Helm chart's `flags` value\n")
	b.WriteString("([helm.md](helm.md#values)). A VMObservation's `spec.policy` overrides, for its VM alone, the\n")
	b.WriteString("thresholds with a field in the \"per VM\" column ([verdicts.md](verdicts.md) says what each one decides).\n")
	b.WriteString("Durations are Go's (`90s`, `5m`, `1h30m`); `vmobs manager -h` prints the same list.\n\n")
	b.WriteString("| flag | default | per VM | what it does |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		perVM := ""
		if field := policyOverride(f.Name, fields); field != "" {
			perVM = "`spec.policy." + field + "`"
		}
		def := "`" + f.DefValue + "`"
		if f.DefValue == "" {
			def = "none"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.Name, def, perVM, tableCell(f.Usage))
	})
	return b.String()
}

// tableCell keeps a usage string inside one Markdown table cell.
func tableCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// policyFields are the json names of spec.policy's fields.
func policyFields() []string {
	var out []string
	typ := reflect.TypeFor[v1alpha1.PolicyOverrides]()
	for i := range typ.NumField() {
		if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// policyOverride is the spec.policy field that overrides the flag, the
// flag's name without its dashes in any case ("lag-grace": "lagGrace"), or
// "".
func policyOverride(flagName string, fields []string) string {
	joined := strings.ReplaceAll(flagName, "-", "")
	for _, field := range fields {
		if strings.EqualFold(joined, field) {
			return field
		}
	}
	return ""
}
