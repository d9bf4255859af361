package simulator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/testenv"
)

// virt-api as kube-apiserver reaches it: the APIService
// v1.subresources.kubevirt.io, the Service kubevirt/virt-api it references
// and the ports, as virt-operator installs them
// (kv:pkg/virt-operator/resource/generate/components/apiservices.go
// NewVirtAPIAPIServices, deployments.go NewApiServerService).
const (
	// VirtAPIService is the Service in KubeVirtNamespace.
	VirtAPIService = "virt-api"
	// VirtAPIVersion is the version of subresources.kubevirt.io served
	// (KubeVirt also serves v1alpha3, which vmobs does not use).
	VirtAPIVersion = "v1"

	virtAPIPort       = 443
	virtAPITargetPort = 8443
	virtAPIGroupPrio  = 1000
	virtAPIVersPrio   = 15
)

// The guest agent subresources VirtAPI serves.
const (
	SubresourceGuestOSInfo    = "guestosinfo"
	SubresourceUserList       = "userlist"
	SubresourceFilesystemList = "filesystemlist"
)

// Messages of virt-api's subresource errors (kv:pkg/virt-api/rest/
// subresource.go).
const (
	vmiNotRunning    = "VMI is not running"
	vmiGuestAgentErr = "VMI does not have guest agent connected"
)

// virtAPIResources are the resources virt-api lists in its discovery of
// subresources.kubevirt.io/v1, in its order, with nothing but the name and
// namespaced (kv:pkg/virt-api/api.go composeSubresources, v1.9.0).
var virtAPIResources = []string{
	"expand-vm-spec",
	"virtualmachineinstances/vnc",
	"virtualmachineinstances/vnc/screenshot",
	"virtualmachineinstances/console",
	"virtualmachineinstances/portforward",
	"virtualmachineinstances/backup",
	"virtualmachineinstances/redefine-checkpoint",
	"virtualmachineinstances/pause",
	"virtualmachineinstances/unpause",
	"virtualmachineinstances/freeze",
	"virtualmachineinstances/unfreeze",
	"virtualmachineinstances/reset",
	"virtualmachineinstances/softreboot",
	"virtualmachines/start",
	"virtualmachines/stop",
	"virtualmachines/restart",
	"virtualmachines/migrate",
	"virtualmachines/expand-spec",
	"virtualmachines/objectgraph",
	"virtualmachines/evacuate/cancel",
	"virtualmachineinstances/guestosinfo",
	"virtualmachineinstances/userlist",
	"virtualmachineinstances/filesystemlist",
	"virtualmachineinstances/addvolume",
	"virtualmachineinstances/removevolume",
	"virtualmachineinstances/objectgraph",
	"virtualmachineinstances/sev/fetchcertchain",
	"virtualmachineinstances/sev/querylaunchmeasurement",
	"virtualmachineinstances/sev/setupsession",
	"virtualmachineinstances/sev/injectlaunchsecret",
	"virtualmachineinstances/evacuate/cancel",
}

// VirtAPI is the simulator's virt-api: the guest agent subresources of
// subresources.kubevirt.io/v1 (guestosinfo, userlist, filesystemlist),
// answered from the VMI in the API server and the simulator's guest agent
// knobs (guestagent.go), and the discovery kube-apiserver's aggregator
// reads, over HTTPS on a loopback port. Other subresources are listed in
// discovery but not served (404).
//
// It authenticates and authorizes as virt-api does: the caller must be
// kube-apiserver's front proxy, by a client certificate signed by the
// request-header CA with an allowed name (read, as virt-api reads them,
// from the ConfigMap kube-system/extension-apiserver-authentication), and
// the user it forwards in the X-Remote-* headers must be allowed the
// subresource by a SubjectAccessReview (kv:pkg/virt-api/rest/authorizer.go).
// Discovery is open to all.
type VirtAPI struct {
	sim      *Simulator
	ln       net.Listener
	srv      *http.Server
	caBundle []byte
	allowed  []string

	env *testenv.Env // set by ServeVirtAPI; Close unregisters from it
}

// ServeVirtAPI starts the simulator's virt-api (StartVirtAPI) and registers
// it with env's kube-apiserver (which must run with Options.Aggregation),
// returning once requests to subresources.kubevirt.io/v1 reach it. Close
// unregisters it and stops it.
func (s *Simulator) ServeVirtAPI(ctx context.Context, env *testenv.Env) (*VirtAPI, error) {
	v, err := s.StartVirtAPI(ctx)
	if err != nil {
		return nil, err
	}
	if err := env.RegisterAggregatedAPI(ctx, v.AggregatedAPI()); err != nil {
		_ = v.Close()
		return nil, err
	}
	v.env = env
	return v, nil
}

// StartVirtAPI starts the simulator's virt-api on a free loopback port
// with a serving certificate of its own, without registering it (see
// ServeVirtAPI, AggregatedAPI). It reads the front proxy's CA and names
// once, now: the control plane must run with request-header
// authentication (testenv Options.Aggregation).
func (s *Simulator) StartVirtAPI(ctx context.Context) (*VirtAPI, error) {
	clientCAs, allowed, err := s.requestHeaderAuth(ctx)
	if err != nil {
		return nil, err
	}
	ca, err := testenv.NewCA("kubevirt-ca")
	if err != nil {
		return nil, err
	}
	svc := VirtAPIService + "." + KubeVirtNamespace
	serving, err := ca.ServingCert(svc+".svc", svc, VirtAPIService)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("virt-api listener: %w", err)
	}
	v := &VirtAPI{sim: s, ln: ln, caBundle: ca.PEM, allowed: allowed}
	v.srv = &http.Server{
		Handler:           v.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// Refused handshakes (a caller without the front proxy's
		// certificate) are expected; they are not logged.
		ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{serving.TLS},
			ClientCAs:    clientCAs,
			// As virt-api: a certificate is verified when given, and
			// every endpoint but discovery requires one
			// (kv:pkg/virt-api/api.go setupTLS).
			ClientAuth:            tls.VerifyClientCertIfGiven,
			VerifyPeerCertificate: v.verifyFrontProxy,
		},
	}
	go func() { _ = v.srv.ServeTLS(ln, "", "") }()
	return v, nil
}

// Address is the host:port the server listens on.
func (v *VirtAPI) Address() string { return v.ln.Addr().String() }

// CABundle is the PEM CA of the server's certificate, valid for
// virt-api.kubevirt.svc.
func (v *VirtAPI) CABundle() []byte { return v.caBundle }

// AggregatedAPI is how kube-apiserver reaches the server: the APIService
// v1.subresources.kubevirt.io as virt-operator writes it, for
// testenv.Env.RegisterAggregatedAPI.
func (v *VirtAPI) AggregatedAPI() testenv.AggregatedAPI {
	return testenv.AggregatedAPI{
		Group: kubevirtv1.SubresourceGroupName, Version: VirtAPIVersion,
		Namespace: KubeVirtNamespace, Service: VirtAPIService,
		Port: virtAPIPort, TargetPort: virtAPITargetPort,
		GroupPriorityMinimum: virtAPIGroupPrio, VersionPriority: virtAPIVersPrio,
		Labels: map[string]string{
			kubevirtv1.AppLabel:       "virt-api-aggregator",
			kubevirtv1.ManagedByLabel: kubevirtv1.ManagedByLabelOperatorValue,
		},
		CABundle: v.caBundle,
		Address:  v.Address(),
	}
}

// Close unregisters the API when ServeVirtAPI registered it and stops the
// server; calls under way are cut. Close it before stopping the control
// plane (in a Ginkgo suite: in AfterSuite before Env.Stop, not with a
// DeferCleanup registered in BeforeSuite, which runs after AfterSuite).
func (v *VirtAPI) Close() error {
	var err error
	if v.env != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = v.env.UnregisterAggregatedAPI(ctx, v.AggregatedAPI())
		v.env = nil
	}
	return errors.Join(err, v.srv.Close())
}

// requestHeaderAuth reads the front proxy's CA and allowed names where
// kube-apiserver publishes them (kv:pkg/virt-api/api.go readRequestHeader).
func (s *Simulator) requestHeaderAuth(ctx context.Context) (*x509.CertPool, []string, error) {
	cm := &corev1.ConfigMap{}
	// kube-apiserver writes it in a post-start hook, done before it is
	// ready; the wait covers a call made while it starts.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "extension-apiserver-authentication"}, cm)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading kube-system/extension-apiserver-authentication: %w", err)
	}
	caPEM, ok := cm.Data["requestheader-client-ca-file"]
	if !ok {
		return nil, nil, errors.New("requestheader-client-ca-file not found in extension-apiserver-authentication ConfigMap: start the control plane with testenv Options.Aggregation")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, nil, errors.New("no certificate in requestheader-client-ca-file of extension-apiserver-authentication")
	}
	var allowed []string
	if names := cm.Data["requestheader-allowed-names"]; names != "" {
		if err := json.Unmarshal([]byte(names), &allowed); err != nil {
			return nil, nil, fmt.Errorf("requestheader-allowed-names of extension-apiserver-authentication: %w", err)
		}
	}
	return pool, allowed, nil
}

// verifyFrontProxy accepts a verified client certificate only with an
// allowed common name (any, when no name is listed).
func (v *VirtAPI) verifyFrontProxy(_ [][]byte, chains [][]*x509.Certificate) error {
	if len(chains) == 0 || len(chains[0]) == 0 || len(v.allowed) == 0 {
		return nil
	}
	if cn := chains[0][0].Subject.CommonName; !slices.Contains(v.allowed, cn) {
		return fmt.Errorf("common name %q is not an allowed front proxy", cn)
	}
	return nil
}

func (v *VirtAPI) handler() http.Handler {
	mux := http.NewServeMux()
	group := kubevirtv1.SubresourceGroupName
	gv := group + "/" + VirtAPIVersion
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, metav1.RootPaths{Paths: []string{"/apis", "/apis/" + group, "/apis/" + gv, "/openapi/v2"}})
	})
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList"}, Groups: []metav1.APIGroup{virtAPIGroup()}})
	})
	mux.HandleFunc("GET /apis/"+group, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, virtAPIGroup())
	})
	mux.HandleFunc("GET /apis/"+gv, func(w http.ResponseWriter, _ *http.Request) {
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
		for _, r := range virtAPIResources {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r, Namespaced: true})
		}
		writeJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	for _, call := range []string{SubresourceGuestOSInfo, SubresourceUserList, SubresourceFilesystemList} {
		mux.HandleFunc("GET /apis/"+gv+"/namespaces/{namespace}/virtualmachineinstances/{name}/"+call, func(w http.ResponseWriter, r *http.Request) {
			v.serveGuest(w, r, call)
		})
	}
	return v.authorize(mux)
}

// virtAPIGroup is the API group virt-api describes, with the versions
// served here. (virt-api names it "subresource.kubevirt.io", a typo
// kube-apiserver never reads: it builds the group's discovery from the
// APIServices.)
func virtAPIGroup() metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: kubevirtv1.SubresourceGroupName + "/" + VirtAPIVersion, Version: VirtAPIVersion}
	return metav1.APIGroup{
		TypeMeta:         metav1.TypeMeta{Kind: "APIGroup"},
		Name:             "subresource.kubevirt.io",
		Versions:         []metav1.GroupVersionForDiscovery{v},
		PreferredVersion: v,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{
			ClientCIDR: "0.0.0.0/0",
		}},
	}
}

// openPaths are served to any caller, as virt-api's noAuthEndpoints
// (kv:pkg/virt-api/rest/authorizer.go), plus the group's path.
var openPaths = map[string]bool{
	"/": true, "/apis": true, "/healthz": true, "/openapi/v2": true, "/openapi/v3": true,
	"/apis/" + kubevirtv1.SubresourceGroupName:                        true,
	"/apis/" + kubevirtv1.SubresourceGroupName + "/" + VirtAPIVersion: true,
}

// authorize lets through a request to an open path, or one from the front
// proxy whose user is allowed the request by a SubjectAccessReview; it
// answers others 401 with the reason, as virt-api's filter does.
func (v *VirtAPI) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			writeText(w, http.StatusUnauthorized, "request is not authenticated")
			return
		}
		sar, err := accessReview(r)
		if err != nil {
			writeText(w, http.StatusUnauthorized, err.Error())
			return
		}
		if err := v.sim.Client.Create(r.Context(), sar); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if !sar.Status.Allowed {
			writeText(w, http.StatusUnauthorized, sar.Status.Reason)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// accessReview is the SubjectAccessReview virt-api asks for a request to
// /apis/<group>/<version>/namespaces/<ns>/<resource>/<name>/<subresource>
// by the user in the request headers (kv:pkg/virt-api/rest/authorizer.go
// generateAccessReview).
func accessReview(r *http.Request) (*authorizationv1.SubjectAccessReview, error) {
	user := r.Header.Get(testenv.RemoteUserHeader)
	if user == "" {
		return nil, errors.New("a user is required")
	}
	parts := strings.Split(r.URL.Path, "/")
	if len(parts) < 9 || parts[1] != "apis" || parts[4] != "namespaces" {
		return nil, fmt.Errorf("unknown api endpoint: %s", r.URL.Path)
	}
	sub := strings.Join(parts[8:], "/")
	if parts[8] == "portforward" {
		// The port and protocol are not subject to RBAC.
		sub = parts[8]
	}
	verb, err := rbacVerb(r.Method)
	if err != nil {
		return nil, err
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, vals := range r.Header {
		if len(k) > len(testenv.RemoteExtraHeaderPrefix) && strings.EqualFold(k[:len(testenv.RemoteExtraHeaderPrefix)], testenv.RemoteExtraHeaderPrefix) {
			key, err := url.PathUnescape(strings.ToLower(k[len(testenv.RemoteExtraHeaderPrefix):]))
			if err != nil {
				key = strings.ToLower(k[len(testenv.RemoteExtraHeaderPrefix):])
			}
			extra[key] = vals
		}
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: r.Header.Values(testenv.RemoteGroupHeader), Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: parts[5], Verb: verb, Group: parts[2], Version: parts[3],
			Resource: parts[6], Name: parts[7], Subresource: sub,
		},
	}}, nil
}

// rbacVerb maps the HTTP method of a request naming an object to its
// verb.
func rbacVerb(method string) (string, error) {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get", nil
	case http.MethodPost:
		return "create", nil
	case http.MethodPut:
		return "update", nil
	case http.MethodPatch:
		return "patch", nil
	case http.MethodDelete:
		return "delete", nil
	}
	return "", fmt.Errorf("unknown http verb in request: %v", method)
}

// serveGuest answers one guest agent call for the VMI in the path, as
// virt-api's GuestOSInfo, UserList and FilesystemList do (kv:pkg/virt-api/
// rest/subresource.go): the VMI is read from the API server and must be
// Running with an AgentConnected condition (of any status, as
// HasCondition checks). Those errors are answered 500 with the message in
// plain text, not a Status: httpGetRequestHandler writes them with
// go-restful's WriteError(500, err). So a VMI that does not exist is a 500
// whose text says "not found", never a 404: FetchVirtualMachineInstance's
// NotFound StatusError loses its code there.
func (v *VirtAPI) serveGuest(w http.ResponseWriter, r *http.Request, call string) {
	if f, ok := v.sim.virtAPIFailing(); ok {
		writeFailure(w, f)
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := v.sim.Client.Get(r.Context(), key(ns, name), vmi); err != nil {
		if apierrors.IsNotFound(err) {
			writeText(w, http.StatusInternalServerError, apierrors.NewNotFound(kubevirtv1.Resource("virtualmachineinstance"), name).Error())
			return
		}
		writeText(w, http.StatusInternalServerError, apierrors.NewInternalError(fmt.Errorf("unable to retrieve vmi [%s]: %w", name, err)).Error())
		return
	}
	if vmi.Status.Phase != kubevirtv1.Running {
		writeText(w, http.StatusInternalServerError, apierrors.NewConflict(kubevirtv1.Resource("virtualmachineinstance"), name, errors.New(vmiNotRunning)).Error())
		return
	}
	if vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) == nil {
		writeText(w, http.StatusInternalServerError, apierrors.NewConflict(kubevirtv1.Resource("virtualmachineinstance"), name, errors.New(vmiGuestAgentErr)).Error())
		return
	}
	a := v.sim.guests.snapshot(ns, name)
	if a.faults&GuestAgentUnresponsive != 0 {
		<-r.Context().Done()
		return
	}
	if a.delay > 0 {
		t := time.NewTimer(a.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	if a.faults&GuestAgentLauncherTimeout != 0 {
		writeText(w, http.StatusInternalServerError, launcherTimeout(call))
		return
	}
	body, err := guestAnswer(call, vmi, a)
	if err != nil {
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// writeFailure answers as a failing server: a Status with the code, and
// Retry-After when set.
func writeFailure(w http.ResponseWriter, f virtAPIFailure) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(f.code),
		Reason:   metav1.StatusReasonUnknown,
		Message:  fmt.Sprintf("virt-api is failing with %d %s", f.code, http.StatusText(f.code)),
	}
	switch f.code {
	case http.StatusTooManyRequests:
		st.Reason = metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		st.Reason = metav1.StatusReasonServiceUnavailable
	case http.StatusInternalServerError:
		st.Reason = metav1.StatusReasonInternalError
	}
	if f.retryAfter > 0 {
		secs := int32((f.retryAfter + time.Second - 1) / time.Second)
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: secs}
		w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
	}
	writeJSON(w, f.code, st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}
