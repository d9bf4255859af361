package integrations

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/test/support"
)

// The Argo CD health check is run the way Argo CD runs it (argoproj/argo-cd
// util/lua/lua.go, VM.runLua and VM.ExecuteHealthLua): gopher-lua, the
// object decoded into a Lua table and set as the global `obj`, a one-second
// context, the script's return value read as a table and decoded through
// JSON into {status, message}, and a status outside Argo CD's six read as
// Unknown. A customization from argocd-cm runs without Lua's standard
// libraries except package, base, table and a reduced os; a built-in one
// (resource_customizations/) with all of them. Every case runs both ways.
// Argo CD's own util/lua is not imported because its module cannot be built
// from the Go module proxy (docs/argocd.md, "Why not Argo CD's own util/lua").

var update = flag.Bool("update", false,
	"rewrite config/argocd/.../testdata/*.yaml from the verdict engine's scenarios (make update-golden)")

const argoDir = "config/argocd/observability.vmobs.io/VMObservation"

// argoHealth is gitops-engine's HealthStatus as it reads the Lua result.
type argoHealth struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

var argoStatuses = map[string]bool{"Healthy": true, "Progressing": true, "Suspended": true, "Degraded": true, "Missing": true, "Unknown": true}

// runArgoHealth mirrors VM.ExecuteHealthLua.
func runArgoHealth(obj map[string]any, script string, openLibs bool) (argoHealth, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	defer l.Close()
	if !openLibs {
		// What Argo CD opens for argocd-cm scripts, less its safe os
		// library: our script needs none of it, and leaving it out proves so.
		for _, lib := range []struct {
			name string
			fn   lua.LGFunction
		}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
			if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.fn), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
				return argoHealth{}, err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, obj))
	if err := l.DoString(script); err != nil {
		return argoHealth{}, err
	}
	ret := l.Get(-1)
	if ret.Type() != lua.LTTable {
		return argoHealth{}, fmt.Errorf("expect table output from Lua script, not %s", ret.Type())
	}
	b, err := json.Marshal(goValue(ret))
	if err != nil {
		return argoHealth{}, err
	}
	var hs argoHealth
	if err := json.Unmarshal(b, &hs); err != nil {
		return argoHealth{}, fmt.Errorf("the script returned %s: %w", b, err)
	}
	if !argoStatuses[hs.Status] {
		return argoHealth{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return hs, nil
}

// luaValue decodes a JSON value into Lua as Argo CD's decodeValue does:
// numbers are LNumber, arrays are tables appended in order, maps are
// tables keyed by string, null is nil.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case int:
		return lua.LNumber(x)
	case int32:
		return lua.LNumber(x)
	case json.Number:
		return lua.LString(x)
	case string:
		return lua.LString(x)
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, it := range x {
			t.Append(luaValue(l, it))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, it := range x {
			t.RawSetH(lua.LString(k), luaValue(l, it))
		}
		return t
	}
	return lua.LNil
}

// goValue encodes a Lua value for JSON as layeh.com/gopher-json does for
// Argo CD: a table with only 1..n keys is an array, else an object.
func goValue(v lua.LValue) any {
	switch x := v.(type) {
	case lua.LBool:
		return bool(x)
	case lua.LNumber:
		return float64(x)
	case lua.LString:
		return string(x)
	case *lua.LTable:
		if n := x.MaxN(); n > 0 {
			arr := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				arr = append(arr, goValue(x.RawGetInt(i)))
			}
			return arr
		}
		m := map[string]any{}
		x.ForEach(func(k, val lua.LValue) { m[k.String()] = goValue(val) })
		return m
	}
	return nil
}

func readArgoScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), argoDir, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// argoTests is health_test.yaml in Argo CD's format.
type argoTests struct {
	Tests []struct {
		HealthStatus argoHealth `json:"healthStatus"`
		InputPath    string     `json:"inputPath"`
	} `json:"tests"`
}

// TestArgoCDHealthLua runs every case of health_test.yaml, as Argo CD's
// TestLuaHealthScript does for its built-in checks.
func TestArgoCDHealthLua(t *testing.T) {
	root := support.RepoRoot(t)
	script := readArgoScript(t)
	raw, err := os.ReadFile(filepath.Join(root, argoDir, "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tests argoTests
	if err := yaml.UnmarshalStrict(raw, &tests); err != nil {
		t.Fatalf("health_test.yaml: %v", err)
	}
	if len(tests.Tests) == 0 {
		t.Fatal("health_test.yaml has no tests")
	}
	seen := map[string]bool{}
	statuses := map[string]bool{}
	for _, tc := range tests.Tests {
		seen[filepath.Clean(tc.InputPath)] = true
		statuses[tc.HealthStatus.Status] = true
		for _, openLibs := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/openLibs=%v", tc.InputPath, openLibs), func(t *testing.T) {
				b, err := os.ReadFile(filepath.Join(root, argoDir, tc.InputPath))
				if err != nil {
					t.Fatal(err)
				}
				obj := map[string]any{}
				if err := yaml.Unmarshal(b, &obj); err != nil {
					t.Fatal(err)
				}
				got, err := runArgoHealth(obj, script, openLibs)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.HealthStatus {
					t.Errorf("health.lua returned\n  %+v\nhealth_test.yaml expects\n  %+v", got, tc.HealthStatus)
				}
			})
		}
	}
	// Every testdata file is a case, and every Argo CD status vmobs can
	// produce is covered.
	files, _ := filepath.Glob(filepath.Join(root, argoDir, "testdata", "*.yaml"))
	for _, f := range files {
		rel := filepath.Join("testdata", filepath.Base(f))
		if !seen[rel] {
			t.Errorf("%s is not referenced by health_test.yaml", rel)
		}
	}
	for _, s := range []string{"Healthy", "Progressing", "Suspended", "Degraded", "Unknown"} {
		if !statuses[s] {
			t.Errorf("health_test.yaml has no case for %s", s)
		}
	}
}

// TestArgoCDHealthOnEngineOutput runs the script on what the verdict engine
// produces today (the testdata files are a snapshot of it) and checks the
// mapping of design.md: same words, Failed → Degraded, stopped as declared
// → Healthy, stale generation → Progressing, message = status.message.
func TestArgoCDHealthOnEngineOutput(t *testing.T) {
	script := readArgoScript(t)
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			u := toUnstructured(t, sc.obs)
			// Through JSON, as Argo CD gets it from the API server.
			b, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{}
			if err := json.Unmarshal(b, &obj); err != nil {
				t.Fatal(err)
			}
			got, err := runArgoHealth(obj, script, false)
			if err != nil {
				t.Fatal(err)
			}
			want := argoHealth{Status: sc.argo, Message: sc.obs.Status.Message}
			if sc.obs.Status.ObservedGeneration < sc.obs.Generation {
				want.Message = fmt.Sprintf("Waiting for vmobs to observe generation %d", sc.obs.Generation)
			}
			if sc.argo == "Healthy" && sc.verdict == v1alpha1.VerdictSuspended {
				// Stopped as declared: the message says so, and carries
				// the engine's.
				if !strings.Contains(got.Message, "stopped as declared") || !strings.HasSuffix(got.Message, sc.obs.Status.Message) {
					t.Errorf("message %q should say the VM is stopped as declared and end with the engine's %q", got.Message, sc.obs.Status.Message)
				}
				want.Message = got.Message
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
	if *update {
		writeArgoTestdata(t)
	}
}

// writeArgoTestdata snapshots the scenarios into testdata/. health_test.yaml
// is kept by hand (its messages are the snapshot's status.message).
func writeArgoTestdata(t *testing.T) {
	dir := filepath.Join(support.RepoRoot(t), argoDir, "testdata")
	var names []string
	for _, sc := range scenarios(t) {
		u := toUnstructured(t, sc.obs)
		unstructured.RemoveNestedField(u.Object, "metadata", "uid")
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		header := "# Produced by the verdict engine (test/integrations, scenario " + sc.name + ");\n" +
			"# regenerate with: go test ./test/integrations -run TestArgoCDHealthOnEngineOutput -update\n"
		if err := os.WriteFile(filepath.Join(dir, sc.name+".yaml"), append([]byte(header), b...), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, sc.name)
	}
	sort.Strings(names)
	t.Logf("wrote %s", strings.Join(names, ", "))
}

// TestArgoCDDocSnippet checks that docs/argocd.md gives health.lua verbatim
// in each of its three install forms: the argocd-cm ConfigMap, the
// argocd-operator's ArgoCD resource (spec.resourceHealthChecks, which the
// operator writes into argocd-cm) and the Argo CD Helm chart's configs.cm.
func TestArgoCDDocSnippet(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "docs", "argocd.md"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "resource.customizations.health.observability.vmobs.io_VMObservation"
	script := readArgoScript(t)
	found := map[string]bool{}
	for _, block := range codeBlocks(string(doc), "yaml") {
		var snippet struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Data       map[string]string `json:"data"`
			Spec       struct {
				ResourceHealthChecks []struct {
					Group string `json:"group"`
					Kind  string `json:"kind"`
					Check string `json:"check"`
				} `json:"resourceHealthChecks"`
			} `json:"spec"`
			Configs struct {
				CM map[string]string `json:"cm"`
			} `json:"configs"`
		}
		if err := yaml.Unmarshal([]byte(block), &snippet); err != nil {
			continue // a multi-document example
		}
		var form, got string
		switch {
		case snippet.Kind == "ConfigMap" && snippet.Data[key] != "":
			form, got = "argocd-cm", snippet.Data[key]
		case snippet.APIVersion == "argoproj.io/v1beta1" && snippet.Kind == "ArgoCD":
			form = "ArgoCD.spec.resourceHealthChecks"
			for _, c := range snippet.Spec.ResourceHealthChecks {
				// The operator's key is group + "_" + kind.
				if c.Group+"_"+c.Kind == "observability.vmobs.io_VMObservation" {
					got = c.Check
				}
			}
		case snippet.Configs.CM[key] != "":
			form, got = "Helm configs.cm", snippet.Configs.CM[key]
		default:
			continue
		}
		found[form] = true
		if got != script {
			t.Errorf("the %s snippet of docs/argocd.md differs from health.lua:\n%s", form, got)
		}
	}
	for _, form := range []string{"argocd-cm", "ArgoCD.spec.resourceHealthChecks", "Helm configs.cm"} {
		if !found[form] {
			t.Errorf("docs/argocd.md has no %s snippet", form)
		}
	}
}

// TestArgoCDDocSyncWaves checks the example of docs/argocd.md against the
// rule it states: the VirtualMachine in the same sync wave as its
// VMObservation or an earlier one (a VMObservation without its VM reads
// Unknown, which never ends a sync step), and ignore-healthcheck on the VM.
func TestArgoCDDocSyncWaves(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "docs", "argocd.md"))
	if err != nil {
		t.Fatal(err)
	}
	wave := func(u *unstructured.Unstructured) int {
		w := 0 // Argo CD's default wave
		if s, ok := u.GetAnnotations()["argocd.argoproj.io/sync-wave"]; ok {
			if _, err := fmt.Sscan(s, &w); err != nil {
				t.Fatalf("%s %s: sync-wave %q: %v", u.GetKind(), u.GetName(), s, err)
			}
		}
		return w
	}
	checked := 0
	for _, block := range codeBlocks(string(doc), "yaml") {
		vms := map[string]*unstructured.Unstructured{}
		var obs []*unstructured.Unstructured
		for _, part := range strings.Split(block, "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(part), &u.Object); err != nil || u.Object == nil {
				continue
			}
			switch u.GetKind() {
			case "VirtualMachine":
				vms[u.GetNamespace()+"/"+u.GetName()] = u
			case "VMObservation":
				obs = append(obs, u)
			}
		}
		for _, o := range obs {
			vm := vms[o.GetNamespace()+"/"+o.GetName()]
			if vm == nil {
				continue
			}
			checked++
			if wave(vm) > wave(o) {
				t.Errorf("VM %s is in sync wave %d, after its VMObservation's %d", vm.GetName(), wave(vm), wave(o))
			}
			if vm.GetAnnotations()["argocd.argoproj.io/ignore-healthcheck"] != "true" {
				t.Errorf("VM %s lacks argocd.argoproj.io/ignore-healthcheck: \"true\"", vm.GetName())
			}
		}
	}
	if checked == 0 {
		t.Error("docs/argocd.md has no example with a VirtualMachine and its VMObservation")
	}
}

// codeBlocks returns the fenced code blocks of a Markdown text in the
// given language.
func codeBlocks(md, lang string) []string {
	var out []string
	rest := md
	for {
		i := strings.Index(rest, "```"+lang+"\n")
		if i < 0 {
			return out
		}
		rest = rest[i+len("```"+lang+"\n"):]
		j := strings.Index(rest, "\n```")
		if j < 0 {
			return out
		}
		out = append(out, rest[:j+1])
		rest = rest[j+4:]
	}
}
