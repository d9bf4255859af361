package analyze

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmobs/vmobs/internal/verdict"
)

// FuzzDecode feeds arbitrary bytes to the loader and the whole pipeline:
// nothing may panic, whatever a dump holds. The seeds are the testdata
// files; `go test -fuzz FuzzDecode ./internal/analyze` explores further.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		vmiDoc, podDoc, "---\n...\n---\n", "[1, {\"kind\": \"List\", \"apiVersion\": \"v1\", \"items\": [[[]]]}]",
		"apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: p, ownerReferences: [{controller: true, kind: VirtualMachineInstance, apiVersion: kubevirt.io/v1, name: vm1}]}\n",
		"--- {apiVersion: kubevirt.io/v1, kind: VirtualMachineInstanceMigration, metadata: {name: m}, spec: {vmiName: 3}}",
	}
	_ = filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && objectFileName(d.Name()) {
			if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
				seeds = append(seeds, string(b))
			}
		}
		return nil
	})
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := Decode("namespaces/fuzz/in.yaml", data)
		res := AnalyzeAll(objs, now, verdict.DefaultPolicy())
		if err := WriteTable(io.Discard, res.Observations); err != nil {
			t.Fatal(err)
		}
		if err := WriteList(io.Discard, res.Observations, FormatYAML); err != nil {
			t.Fatal(err)
		}
	})
}
