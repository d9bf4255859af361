package netstatus

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// multusStatus is a network-status annotation as Multus writes it for a
// launcher pod with a pod network and one bridge network.
const multusStatus = `[{
    "name": "ovn-kubernetes",
    "interface": "eth0",
    "ips": [
        "10.244.1.17",
        "fd10:244::11"
    ],
    "mac": "0a:58:0a:f4:01:11",
    "default": true,
    "dns": {}
},{
    "name": "prod/ext-net",
    "interface": "pod3f9b0c62e1d",
    "ips": [
        "192.168.100.10"
    ],
    "mac": "02:3f:9a:00:00:02",
    "dns": {},
    "device-info": {"type": "pci", "version": "1.1.0", "pci": {"pci-address": "0000:3b:02.4"}},
    "gateway": ["192.168.100.1"],
    "mtu": 1500
}]`

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want []Status
		err  error
	}{
		{name: "multus", in: multusStatus, want: []Status{
			{Name: "ovn-kubernetes", Interface: "eth0", IPs: []string{"10.244.1.17", "fd10:244::11"}, MAC: "0a:58:0a:f4:01:11", Default: true},
			{Name: "prod/ext-net", Interface: "pod3f9b0c62e1d", IPs: []string{"192.168.100.10"}, MAC: "02:3f:9a:00:00:02"},
		}},
		{name: "empty list", in: ` [ ] `, want: []Status{}},
		{name: "null", in: `null`, want: nil},
		{name: "null entry", in: `[null]`, want: []Status{{}}},
		{name: "escapes", in: `[{"name":"a\u002fb","interface":"eth\"0"}]`, want: []Status{{Name: "a/b", Interface: `eth"0`}}},
		{name: "keys fold case, last wins", in: `[{"NAME":"x","name":"y","Ips":["1"],"ips":null}]`, want: []Status{{Name: "y"}}},
		{name: "object", in: `{"name":"x"}`, err: errNetStatusShape},
		{name: "list of strings", in: `["eth0"]`, err: errNetStatusShape},
		{name: "ips not a list", in: `[{"ips":"10.0.0.1"}]`, err: errNetStatusShape},
		{name: "default not a bool", in: `[{"default":"true"}]`, err: errNetStatusShape},
		{name: "cut", in: `[{"name":"ovn",`, err: errNetStatusSyntax},
		{name: "trailing comma", in: `[{"name":"ovn"},]`, err: errNetStatusSyntax},
		{name: "trailing data", in: `[] x`, err: errNetStatusSyntax},
		{name: "bad number", in: `[{"mtu":01}]`, err: errNetStatusSyntax},
		{name: "control character", in: "[{\"name\":\"a\x01\"}]", err: errNetStatusSyntax},
		{name: "empty", in: ``, err: errNetStatusSyntax},
		{name: "too deep", in: `[{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}]`, err: errNetStatusSyntax},
		{name: "too many", in: "[" + strings.Repeat("{},", maxStatusEntries) + "{}]", err: errNetStatusTooBig},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.in)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err == nil && !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

// refStatus is the reference: encoding/json into the upstream
// field names.
type refStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	MAC       string   `json:"mac"`
	Default   bool     `json:"default"`
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		multusStatus, `[]`, `null`, `[null]`, `[{"name":"a\u002fb"}]`, `[{"NAME":"x","ips":null}]`, `{"name":"x"}`,
		`[{"ips":["10.0.0.1",null]}]`, `[{"dns":{"nameservers":["1.1.1.1"]},"mtu":1.5e3}]`, "[{\"name\":\"\xff\"}]",
		`[{"default":true,"default":null}]`, `[{"interface":"eth0","ips":["10.0.0.1"],"ips":[]}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		var ref []refStatus
		refErr := json.Unmarshal([]byte(s), &ref)
		if err != nil {
			// Stricter than encoding/json only on size and nesting.
			if refErr == nil && !errors.Is(err, errNetStatusTooBig) && strings.Count(s, "[")+strings.Count(s, "{") <= maxJSONDepth {
				t.Fatalf("rejected %q (%v) that encoding/json accepts", s, err)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("accepted %q that encoding/json rejects: %v", s, refErr)
		}
		if len(got) != len(ref) {
			t.Fatalf("%d entries, encoding/json %d", len(got), len(ref))
		}
		for i := range got {
			g, r := got[i], ref[i]
			if g.Name != r.Name || g.Interface != r.Interface || g.MAC != r.MAC || g.Default != r.Default ||
				len(g.IPs) != len(r.IPs) || (len(g.IPs) > 0 && !reflect.DeepEqual(g.IPs, r.IPs)) {
				t.Fatalf("entry %d = %#v, encoding/json %#v", i, g, r)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Parse(multusStatus)
	}
}
