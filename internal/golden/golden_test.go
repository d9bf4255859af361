package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of ending the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Helper()               {}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "page.md")
	check := func(want string, update bool) bool {
		r := &recorder{TB: t}
		Check(r, path, []byte(want), update, "go test -update")
		return !r.failed
	}
	if check("a\n", false) {
		t.Error("a missing file passed")
	}
	if !check("a\n", true) {
		t.Error("-update failed")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	if !check("a\n", false) {
		t.Error("the file as generated failed")
	}
	if check("b\n", false) {
		t.Error("a stale file passed")
	}
}
