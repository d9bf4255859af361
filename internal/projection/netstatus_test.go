package projection

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/netstatus"
)

var netStatusSeeds = []struct {
	text   string
	packed bool
}{
	{`[{"name":"ovn-kubernetes","interface":"eth0","ips":["10.244.1.17"],"mac":"0a:58:0a:f4:01:11","default":true,"dns":{}},
	  {"name":"prod/ext","interface":"pod3f9b0c62e1d","ips":["192.168.100.10"],"mac":"02:3f:9a:00:00:02","dns":{},"gateway":["192.168.100.1"],"mtu":1500}]`, true},
	{`[{"name":"kindnet","interface":"eth0","ips":["fd10:244::11"],"default":true}]`, true},
	{`[{"name":"kindnet"}]`, true},
	{`[{"name":"ovn","ips":["10.244.1.17","fd10:244::11"]}]`, false}, // dual stack
	{`[{"name":"ovn","ips":["fe80::1%eth0"]}]`, false},               // a zone
	{`[{"name":"ovn","ips":["::ffff:10.0.0.1"]}]`, true},             // IPv4-mapped, as written
	{`[{"name":"ovn","ips":["010.0.0.1"]}]`, false},                  // not as Go writes it
	{`[{"name":"ovn","mac":"0A:58:0A:F4:01:11"}]`, false},            // uppercase
	{`[{"name":"ovn","mac":"00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01"}]`, false},
	{`[{"name":"ovn","ips":"10.0.0.1"}]`, false}, // the engine refuses it: stays text
	{"[{\"name\":\"a\xffb\"}]", true},            // invalid UTF-8: read as U+FFFD either way
	{`[{"name":"a\u003cb\"c","interface":"\u00e9"}]`, true},
	{`null`, false},
	{`[]`, false},
	{`not json`, false},
}

// A packed network status reads back, through its rebuilt text, as the
// engine read the original; anything else stays text.
func TestNetStatusPacksOnlyWhatReadsBackTheSame(t *testing.T) {
	for _, tc := range netStatusSeeds {
		nets, ok := packNetStatus(tc.text)
		if ok != tc.packed {
			t.Errorf("%s: packed %v, want %v", tc.text, ok, tc.packed)
			continue
		}
		if ok {
			checkNetRoundTrip(t, tc.text, *nets)
		}
	}
}

func checkNetRoundTrip(t *testing.T, text string, nets []PodNet) {
	t.Helper()
	want, err := netstatus.Parse(text)
	if err != nil {
		t.Fatalf("%s packed but does not parse: %v", text, err)
	}
	got, err := netstatus.Parse(netStatusText(nets))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: read back as %+v (%v), want %+v", text, got, err, want)
	}
}

// The pod projection keeps a packable annotation as entries and gives it
// back as text; an unpackable one stays text beside the other annotations.
func TestPodNetStatusRoundTrip(t *testing.T) {
	for _, tc := range netStatusSeeds {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{membership.NetworkStatusAnnotation: tc.text}}}
		p := FromPod(pod)
		if (p.Net != nil) != tc.packed || (p.Net != nil) == (p.Value(membership.NetworkStatusAnnotation) != "") {
			t.Errorf("%s: packed %v, kept as text %q", tc.text, p.Net != nil, p.Value(membership.NetworkStatusAnnotation))
		}
		got := p.DeepCopyObject().(*Pod).ToPod().Annotations[membership.NetworkStatusAnnotation]
		want, wantErr := netstatus.Parse(tc.text)
		back, err := netstatus.Parse(got)
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(back, want) {
			t.Errorf("%s: the engine reads %+v (%v), want %+v (%v)", tc.text, back, err, want, wantErr)
		}
	}
}

func FuzzNetStatusPack(f *testing.F) {
	for _, tc := range netStatusSeeds {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if nets, ok := packNetStatus(text); ok {
			checkNetRoundTrip(t, text, *nets)
		}
	})
}
