package testenv

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// API aggregation on the test control plane.
//
// kube-apiserver proxies an aggregated API (an APIService with a service
// reference) to the Service's endpoints: with --enable-aggregator-routing
// it picks an address from the Service's EndpointSlices (in 1.37,
// k8s.io/apiserver/pkg/util/proxy ResolveEndpoint reads EndpointSlices, no
// longer Endpoints) and dials it. A test's server listens on 127.0.0.1, but
// EndpointSlice validation refuses loopback addresses ("may not be in the
// loopback range"), and the test control plane has no kube-proxy that would
// route a cluster IP. So the Env gives kube-apiserver an egress selector
// (--egress-selector-config-file, the konnectivity mechanism a control
// plane outside the cluster network uses): every connection it makes into
// the "cluster" network goes as an HTTP CONNECT through a Unix socket the
// Env serves. The Env's proxy connects the EndpointSlice address it gave an
// aggregated API to that API's server on loopback, and any other address
// as asked. The endpoint addresses come from TEST-NET-2 (198.51.100.0/24,
// RFC 5737): they are routed by the Env's proxy alone.

// FrontProxyClientName is the common name of kube-apiserver's front-proxy
// client certificate, the one --requestheader-allowed-names allows: an
// aggregated API server accepts a request from kube-apiserver when the
// client certificate is signed by the front-proxy CA and has this name.
const FrontProxyClientName = "front-proxy-client"

// Request-header flags as kubeadm sets them: the headers kube-apiserver
// puts the authenticated user in when it proxies a request.
const (
	RemoteUserHeader        = "X-Remote-User"
	RemoteGroupHeader       = "X-Remote-Group"
	RemoteExtraHeaderPrefix = "X-Remote-Extra-"
)

// endpointNet is the /24 the endpoint addresses of aggregated APIs come
// from; endpointFirst is the first host number given out.
const (
	endpointNet   = "198.51.100."
	endpointFirst = 10
)

// aggregation is what Options.Aggregation adds to an Env.
type aggregation struct {
	dir          string
	frontProxyCA *CA
	egress       net.Listener
	served       chan struct{} // closed when the egress proxy stops accepting

	// client is made when the control plane starts: made later, a
	// controller-runtime client warns that no logger was set.
	client client.Client

	mu     sync.Mutex
	routes map[string]string   // endpoint host:port → the server's address
	apis   map[string]endpoint // APIService name → its endpoint
	next   int                 // next endpoint host number
}

// endpoint is the EndpointSlice address an aggregated API got.
type endpoint struct {
	ip   string
	port int32
}

// startAggregation writes the front-proxy CA and client certificate and the
// egress selector configuration into a directory of its own, starts the
// egress proxy, and returns the kube-apiserver flags that use them.
func startAggregation() (*aggregation, map[string]string, error) {
	// The socket's path must fit a sockaddr_un (108 bytes on Linux, 104 on
	// macOS): a short directory name and a short file name.
	dir, err := os.MkdirTemp("", "vmobs-agg-")
	if err != nil {
		return nil, nil, err
	}
	a := &aggregation{dir: dir, routes: map[string]string{}, apis: map[string]endpoint{}, next: endpointFirst, served: make(chan struct{})}
	flags, err := a.prepare()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	go a.serveEgress()
	return a, flags, nil
}

func (a *aggregation) prepare() (map[string]string, error) {
	var err error
	a.frontProxyCA, err = NewCA("front-proxy-ca")
	if err != nil {
		return nil, err
	}
	proxyClient, err := a.frontProxyCA.ClientCert(FrontProxyClientName)
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(a.dir, "egress.sock")
	if len(socket) > 100 {
		return nil, fmt.Errorf("the egress socket path %s is too long for a Unix socket: set TMPDIR to a shorter directory", socket)
	}
	egressConfig := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, socket)
	files := map[string][]byte{
		"front-proxy-ca.crt":     a.frontProxyCA.PEM,
		"front-proxy-client.crt": proxyClient.CertPEM,
		"front-proxy-client.key": proxyClient.KeyPEM,
		"egress-selector.yaml":   []byte(egressConfig),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(a.dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	a.egress, err = net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("egress proxy socket: %w", err)
	}
	return map[string]string{
		"requestheader-client-ca-file":       filepath.Join(a.dir, "front-proxy-ca.crt"),
		"requestheader-allowed-names":        FrontProxyClientName,
		"requestheader-username-headers":     RemoteUserHeader,
		"requestheader-group-headers":        RemoteGroupHeader,
		"requestheader-extra-headers-prefix": RemoteExtraHeaderPrefix,
		"proxy-client-cert-file":             filepath.Join(a.dir, "front-proxy-client.crt"),
		"proxy-client-key-file":              filepath.Join(a.dir, "front-proxy-client.key"),
		"enable-aggregator-routing":          "true",
		"egress-selector-config-file":        filepath.Join(a.dir, "egress-selector.yaml"),
	}, nil
}

// stop closes the egress proxy and removes the directory. Tunnels still
// open end with kube-apiserver.
func (a *aggregation) stop() error {
	err := a.egress.Close()
	<-a.served
	return errors.Join(err, os.RemoveAll(a.dir))
}

// serveEgress accepts kube-apiserver's connections until the listener
// closes.
func (a *aggregation) serveEgress() {
	defer close(a.served)
	for {
		conn, err := a.egress.Accept()
		if err != nil {
			return
		}
		go a.tunnel(conn)
	}
}

// tunnel answers one HTTP CONNECT (k8s.io/apiserver/pkg/server/
// egressselector tunnelHTTPConnect sends it and waits for a 200 before the
// TLS handshake) and then copies bytes both ways until either side closes.
func (a *aggregation) tunnel(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(conn, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	target := a.route(req.Host)
	up, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nX-Dial-Error: %s\r\n\r\n", sanitizeHeader(err.Error()))
		return
	}
	defer func() { _ = up.Close() }()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
	// Either side closing ends the tunnel: the deferred closes unblock the
	// other copy.
	<-done
}

// route is where a tunnel to hostPort goes: the server registered for an
// aggregated API's endpoint, else hostPort itself.
func (a *aggregation) route(hostPort string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if to, ok := a.routes[hostPort]; ok {
		return to
	}
	return hostPort
}

// sanitizeHeader keeps s on one header line.
func sanitizeHeader(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// endpointFor gives the APIService name an endpoint address (the same one
// when it is registered again) and routes it to address.
func (a *aggregation) endpointFor(name string, port int32, address string) (endpoint, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ep, ok := a.apis[name]
	if ok {
		delete(a.routes, net.JoinHostPort(ep.ip, fmt.Sprint(ep.port)))
	} else {
		if a.next > 254 {
			return endpoint{}, fmt.Errorf("no endpoint address left for %s", name)
		}
		ep.ip = fmt.Sprintf("%s%d", endpointNet, a.next)
		a.next++
	}
	ep.port = port
	a.apis[name] = ep
	a.routes[net.JoinHostPort(ep.ip, fmt.Sprint(port))] = address
	return ep, nil
}

func (a *aggregation) forget(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ep, ok := a.apis[name]; ok {
		delete(a.routes, net.JoinHostPort(ep.ip, fmt.Sprint(ep.port)))
	}
}

// AggregatedAPI is one group version served by a server of its own behind
// kube-apiserver: the APIService, the Service it references and where the
// server listens.
type AggregatedAPI struct {
	// Group and Version are the API's.
	Group, Version string
	// Namespace and Service name the Service the APIService references;
	// the namespace is created when missing.
	Namespace, Service string
	// Port is the Service's port (the APIService's service.port) and
	// TargetPort the endpoint's; zero is 443 and Port.
	Port, TargetPort int32
	// GroupPriorityMinimum and VersionPriority order the API in discovery.
	GroupPriorityMinimum, VersionPriority int32
	// Labels are put on the APIService.
	Labels map[string]string
	// CABundle is the PEM CA that signed the server's serving
	// certificate, which kube-apiserver checks for the name
	// <Service>.<Namespace>.svc.
	CABundle []byte
	// Address is the server's host:port (on loopback, as a test's server
	// listens).
	Address string
}

// Name is the APIService's name, <version>.<group>.
func (a AggregatedAPI) Name() string { return a.Version + "." + a.Group }

// ServerName is the name kube-apiserver expects in the server's
// certificate.
func (a AggregatedAPI) ServerName() string { return a.Service + "." + a.Namespace + ".svc" }

func (a AggregatedAPI) ports() (port, target int32) {
	port = a.Port
	if port == 0 {
		port = 443
	}
	target = a.TargetPort
	if target == 0 {
		target = port
	}
	return port, target
}

// FrontProxyCA is the CA of kube-apiserver's front-proxy client
// certificate (--requestheader-client-ca-file), the one an aggregated API
// server verifies callers against; nil without Options.Aggregation.
// kube-apiserver also publishes it, as aggregated API servers read it, in
// the ConfigMap kube-system/extension-apiserver-authentication.
func (e *Env) FrontProxyCA() *CA {
	if e.agg == nil {
		return nil
	}
	return e.agg.frontProxyCA
}

// RegisterAggregatedAPI registers api with kube-apiserver as a cluster
// operator would, and returns once kube-apiserver proxies to it: a
// selector-less ClusterIP Service, an EndpointSlice with one ready
// address (routed to api.Address by the Env's egress proxy), and the
// APIService; then it waits until the APIService is Available and a
// discovery request for the group version gets through. Registering the
// same API again updates it (a new address or CA bundle). The Env must
// have been started with Options.Aggregation.
func (e *Env) RegisterAggregatedAPI(ctx context.Context, api AggregatedAPI) error {
	if e.agg == nil {
		return errors.New("RegisterAggregatedAPI: the control plane was started without Options.Aggregation")
	}
	c := e.agg.client
	port, target := api.ports()
	ep, err := e.agg.endpointFor(api.Name(), target, api.Address)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: api.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", api.Namespace, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: api.Namespace, Name: api.Service},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := c.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Service %s/%s: %w", api.Namespace, api.Service, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: api.Namespace, Name: api.Service + "-testenv",
			Labels: map[string]string{
				discoveryv1.LabelServiceName: api.Service,
				discoveryv1.LabelManagedBy:   "testenv.vmobs.io",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ep.ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		// The Service port has no name, so the endpoint port's name is "".
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(target), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := apply(ctx, c, slice); err != nil {
		return err
	}
	if err := apply(ctx, c, apiService(api, port)); err != nil {
		return err
	}
	return e.waitAggregated(ctx, c, api)
}

// UnregisterAggregatedAPI deletes what RegisterAggregatedAPI created,
// except the namespace. Without it an APIService whose server is gone
// makes every discovery of the cluster's APIs partial.
func (e *Env) UnregisterAggregatedAPI(ctx context.Context, api AggregatedAPI) error {
	if e.agg == nil {
		return nil
	}
	c := e.agg.client
	var errs []error
	for _, obj := range []client.Object{
		apiService(api, 0),
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: api.Namespace, Name: api.Service + "-testenv"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: api.Namespace, Name: api.Service}},
	} {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	e.agg.forget(api.Name())
	return errors.Join(errs...)
}

// apiService is the APIService of api, unstructured: apiregistration.k8s.io
// types live in k8s.io/kube-aggregator, which nothing else here needs.
func apiService(api AggregatedAPI, port int32) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": api.Name()},
		"spec": map[string]any{
			"group":                api.Group,
			"version":              api.Version,
			"groupPriorityMinimum": int64(api.GroupPriorityMinimum),
			"versionPriority":      int64(api.VersionPriority),
			"caBundle":             base64.StdEncoding.EncodeToString(api.CABundle),
			"service": map[string]any{
				"namespace": api.Namespace,
				"name":      api.Service,
				"port":      int64(port),
			},
		},
	}}
	if len(api.Labels) > 0 {
		u.SetLabels(api.Labels)
	}
	return u
}

// apply creates obj, or replaces the existing object's spec with obj's.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
		return nil
	}
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	if err := c.Update(ctx, obj); err != nil {
		return fmt.Errorf("updating %s: %w", obj.GetName(), err)
	}
	return nil
}

// waitAggregated waits until the APIService is Available and kube-apiserver
// proxies a discovery request to the server: the proxy learns of the
// Available condition from its own informer, a moment after it is stored.
func (e *Env) waitAggregated(ctx context.Context, c client.Client, api AggregatedAPI) error {
	hc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u := apiService(api, 0)
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		available := false
		last = "no Available condition"
		for _, ci := range conds {
			cond, _ := ci.(map[string]any)
			if cond["type"] == "Available" {
				available = cond["status"] == "True"
				last = fmt.Sprintf("Available=%v %v: %v", cond["status"], cond["reason"], cond["message"])
			}
		}
		if !available {
			return false, nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.Config.Host, "/")+"/apis/"+api.Group+"/"+api.Version, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = fmt.Sprintf("Available, but discovery fails: %v", err)
			return false, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Sprintf("Available, but discovery answers %s: %s", resp.Status, body)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s did not become available: %s: %w", api.Name(), last, err)
	}
	return nil
}
