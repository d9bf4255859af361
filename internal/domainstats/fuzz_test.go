package domainstats

import (
	"os"
	"testing"
)

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

// FuzzDecode feeds Prometheus' answer decoder anything: it must return
// samples or an error, never panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"namespace":"a","name":"b"},"value":[1,"NaN"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1e999"]},{"metric":null,"value":[]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"matrix","result":[]}}`,
		`[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		samples, _, err := decode(b)
		if err != nil && samples != nil {
			t.Fatal("samples with an error")
		}
	})
}
