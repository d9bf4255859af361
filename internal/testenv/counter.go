package testenv

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// RequestCounter counts the API requests a client makes, by verb and
// resource, so tests can assert how many writes a scenario cost.
type RequestCounter struct {
	mu      sync.Mutex
	counts  map[string]int
	objects map[string]int // "verb resource namespace/name"
}

// NewRequestCounter returns an empty counter.
func NewRequestCounter() *RequestCounter {
	return &RequestCounter{counts: map[string]int{}, objects: map[string]int{}}
}

// Wrap returns a copy of cfg whose requests are counted.
func (c *RequestCounter) Wrap(cfg *rest.Config) *rest.Config {
	return Intercept(cfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode < 300 {
			c.add(Key(req), ObjectOf(req))
		}
		return resp, err
	})
}

// Intercept returns a copy of cfg whose requests go through f, which sends
// them on (or not) with next: the transport wrappers of tests that count,
// time, record or break a client's requests.
func Intercept(cfg *rest.Config, f func(req *http.Request, next http.RoundTripper) (*http.Response, error)) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return RoundTripFunc(func(req *http.Request) (*http.Response, error) { return f(req, rt) })
	})
	return out
}

// AcceptedWrite names a request the API server accepted (a 2xx answer)
// that wrote resource or one of its subresources, as Key does; ok is false
// for anything else.
func AcceptedWrite(req *http.Request, resp *http.Response, err error, resource string) (key string, ok bool) {
	if err != nil || resp.StatusCode >= 300 || req.Method == http.MethodGet {
		return "", false
	}
	k := Key(req)
	if _, res, _ := strings.Cut(k, " "); res == resource || strings.HasPrefix(res, resource+"/") {
		return k, true
	}
	return "", false
}

// RoundTripFunc makes a function an http.RoundTripper, for the transport
// wrappers of tests.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Key names a request as "verb resource[/subresource]", e.g.
// "apply vmobservations/status" or "create vmobservations". Watches and
// reads are counted too, as "get", "list" and "watch".
func Key(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/namespaces/ns/pods/name/status or /apis/g/v/namespaces/ns/r/name/sub
	if len(parts) > 0 && parts[0] == "apis" && len(parts) > 2 {
		parts = parts[3:]
	} else if len(parts) > 1 {
		parts = parts[2:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource, named := "", false
	switch len(parts) {
	case 0:
	case 1:
		resource = parts[0]
	case 2:
		resource, named = parts[0], true
	default:
		resource, named = parts[0]+"/"+parts[2], true
	}
	verb := strings.ToLower(req.Method)
	switch req.Method {
	case http.MethodGet:
		verb = "get"
		if !named {
			verb = "list"
			if req.URL.Query().Get("watch") == "true" {
				verb = "watch"
			}
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
		if strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch") {
			verb = "apply"
		}
	}
	return verb + " " + resource
}

// ObjectOf is "namespace/name" of a namespaced request on one object, or
// "namespace/" for a create (whose name is in the body).
func ObjectOf(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" && i+3 < len(parts) {
			return parts[i+1] + "/" + parts[i+3]
		}
		if parts[i] == "namespaces" && i+2 < len(parts) {
			return parts[i+1] + "/"
		}
	}
	return ""
}

func (c *RequestCounter) add(key, object string) {
	c.mu.Lock()
	c.counts[key]++
	if object != "" {
		c.objects[key+" "+object]++
	}
	c.mu.Unlock()
}

// ObjectWrites counts the writes to one object and its subresources, by
// verb ("apply vmobservations/status" -> 2). Creates are counted under the
// namespace alone: pass name "" to get them.
func (c *RequestCounter) ObjectWrites(resource, namespace, name string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.objects {
		fields := strings.Fields(k)
		if len(fields) != 3 || fields[2] != namespace+"/"+name {
			continue
		}
		if fields[1] != resource && !strings.HasPrefix(fields[1], resource+"/") {
			continue
		}
		switch fields[0] {
		case "create", "update", "patch", "apply", "delete":
			out[fields[0]+" "+fields[1]] += v
		}
	}
	return out
}

// Get returns the count for one key.
func (c *RequestCounter) Get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// Writes counts the requests that changed the given resource (create,
// update, patch, apply, delete, on the object or a subresource).
func (c *RequestCounter) Writes(resource string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.counts {
		verb, res, _ := strings.Cut(k, " ")
		if res != resource && !strings.HasPrefix(res, resource+"/") {
			continue
		}
		switch verb {
		case "create", "update", "patch", "apply", "delete":
			n += v
		}
	}
	return n
}

// Snapshot copies the counts.
func (c *RequestCounter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Reset zeroes the counts.
func (c *RequestCounter) Reset() {
	c.mu.Lock()
	c.counts = map[string]int{}
	c.objects = map[string]int{}
	c.mu.Unlock()
}
