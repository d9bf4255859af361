package app

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/vmobs/vmobs/internal/scheme"
)

func TestWithRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name             string
		inQPS            float32
		inBurst          int
		qps              float32
		burst            int
		wantQPS          float32
		wantBurst        int
		wantRateLimiter  bool
		inHasRateLimiter bool
	}{
		// The caller's 1000 QPS (tests set it) must not survive: the
		// manager runs what ships.
		{name: "off by default", inQPS: 1000, inBurst: 2000, wantQPS: -1, wantBurst: 0},
		{name: "client-go default left by the kubeconfig is turned off", wantQPS: -1},
		{name: "a limit with its burst", qps: 50, burst: 80, wantQPS: 50, wantBurst: 80, wantRateLimiter: true},
		{name: "burst defaults to twice the limit", qps: 50, wantQPS: 50, wantBurst: 100, wantRateLimiter: true},
		{name: "a tiny limit still allows one request", qps: 0.2, wantQPS: 0.2, wantBurst: 1, wantRateLimiter: true},
		{name: "the caller's own rate limiter is dropped", inHasRateLimiter: true, wantQPS: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &rest.Config{Host: "https://127.0.0.1:6443", QPS: tc.inQPS, Burst: tc.inBurst}
			if tc.inHasRateLimiter {
				in.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(1, 1)
			}
			got := withRateLimit(in, tc.qps, tc.burst)
			if got.QPS != tc.wantQPS || got.Burst != tc.wantBurst {
				t.Errorf("QPS, Burst = %v, %d; want %v, %d", got.QPS, got.Burst, tc.wantQPS, tc.wantBurst)
			}
			if in.QPS != tc.inQPS || in.Burst != tc.inBurst || (in.RateLimiter != nil) != tc.inHasRateLimiter {
				t.Errorf("the caller's config was changed: QPS %v, Burst %d", in.QPS, in.Burst)
			}
			// What client-go makes of it: a REST client with or without
			// a token bucket.
			rc := rest.CopyConfig(got)
			rc.GroupVersion = &schema.GroupVersion{Version: "v1"}
			rc.APIPath = "/api"
			rc.NegotiatedSerializer = serializer.NewCodecFactory(scheme.New()).WithoutConversion()
			client, err := rest.RESTClientFor(rc)
			if err != nil {
				t.Fatal(err)
			}
			if has := client.GetRateLimiter() != nil; has != tc.wantRateLimiter {
				t.Errorf("REST client has a rate limiter: %v, want %v", has, tc.wantRateLimiter)
			}
		})
	}
}
