package simulator

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/testenv"
)

// EvictionWebhookName is the name of virt-api's webhook on pods/eviction,
// and of the ValidatingWebhookConfiguration ServeEvictionAdmitter creates.
const EvictionWebhookName = "virt-launcher-eviction-interceptor.kubevirt.io"

// EvictionAdmitter is virt-api's validating webhook on pods/eviction, served
// in-process and registered with the API server: it answers a drain's
// evictions of launcher pods as KubeVirt does.
type EvictionAdmitter struct {
	// ClusterStrategy is the KubeVirt CR's evictionStrategy, for VMIs that
	// set none; empty is KubeVirt's default, None.
	ClusterStrategy kubevirtv1.EvictionStrategy

	s      *Simulator
	server *http.Server
}

// ServeEvictionAdmitter serves the eviction admitter over TLS on loopback
// and registers it with the API server as a ValidatingWebhookConfiguration
// on CREATE pods/eviction. Stop it with Close.
func (s *Simulator) ServeEvictionAdmitter(ctx context.Context) (*EvictionAdmitter, error) {
	ca, err := testenv.NewCA("eviction-admitter-ca")
	if err != nil {
		return nil, err
	}
	cert, err := ca.ServingCert("localhost")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &EvictionAdmitter{s: s}
	mux := http.NewServeMux()
	mux.HandleFunc("/pod-eviction", a.serve)
	a.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12}}
	go func() { _ = a.server.ServeTLS(ln, "", "") }()

	url := fmt.Sprintf("https://localhost:%d/pod-eviction", ln.Addr().(*net.TCPAddr).Port)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: EvictionWebhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    EvictionWebhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca.PEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	if err := s.Client.Create(ctx, cfg); err != nil {
		_ = a.server.Close()
		return nil, fmt.Errorf("registering the eviction admitter: %w", err)
	}
	return a, nil
}

// Close stops serving.
func (a *EvictionAdmitter) Close() error { return a.server.Close() }

func (a *EvictionAdmitter) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	resp := a.admit(r.Context(), review.Request)
	resp.UID = review.Request.UID
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// admit is KubeVirt's PodEvictionAdmitter.Admit for launcher pods
// (kv:pkg/virt-api/webhooks/validating-webhook/admitters/
// pod-eviction-admitter.go): LiveMigrate refuses a VMI that is not
// live-migratable outright; LiveMigrate, LiveMigrateIfPossible with a
// migratable VMI and External mark the VMI for evacuation (Evict) and
// refuse; every other eviction passes. Refusals are 429, which kubectl
// drain retries.
func (a *EvictionAdmitter) admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allowed := &admissionv1.AdmissionResponse{Allowed: true}
	pod := &corev1.Pod{}
	if err := a.s.Client.Get(ctx, key(req.Namespace, req.Name), pod); err != nil {
		return allowed
	}
	if pod.Labels[kubevirtv1.AppLabel] != "virt-launcher" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return allowed
	}
	vmiName, ok := pod.Annotations[kubevirtv1.DomainAnnotation]
	if !ok {
		return allowed
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := a.s.Client.Get(ctx, key(req.Namespace, vmiName), vmi); err != nil {
		return denied(fmt.Sprintf("kubevirt failed getting the vmi: %v", err))
	}
	strategy := a.ClusterStrategy
	if vmi.Spec.EvictionStrategy != nil {
		strategy = *vmi.Spec.EvictionStrategy
	}
	mark := false
	switch strategy {
	case kubevirtv1.EvictionStrategyLiveMigrate:
		if !vmi.IsMigratable() {
			return denied(fmt.Sprintf("VMI %s is configured with an eviction strategy but is not live-migratable", vmi.Name))
		}
		mark = true
	case kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
		mark = vmi.IsMigratable()
	case kubevirtv1.EvictionStrategyExternal:
		mark = true
	}
	if !mark {
		return allowed
	}
	const evictionFmt = "Eviction triggered evacuation of VMI \"%s/%s\""
	if vmi.IsMarkedForEviction() {
		return denied(fmt.Sprintf("Evacuation in progress: "+evictionFmt, vmi.Namespace, vmi.Name))
	}
	if vmi.Status.NodeName != pod.Spec.NodeName {
		return denied("Eviction request for target Pod")
	}
	var eviction policyv1.Eviction
	if err := json.Unmarshal(req.Object.Raw, &eviction); err != nil {
		return denied(fmt.Sprintf("failed to parse the eviction object: %v", err))
	}
	dryRun := req.DryRun != nil && *req.DryRun ||
		eviction.DeleteOptions != nil && len(eviction.DeleteOptions.DryRun) > 0 && eviction.DeleteOptions.DryRun[0] == metav1.DryRunAll
	if !dryRun {
		if err := a.s.Evict(ctx, vmi.Namespace, vmi.Name); err != nil && !errors.Is(err, context.Canceled) && !apierrors.IsNotFound(err) {
			return denied(fmt.Sprintf("kubevirt failed marking the vmi for eviction: %v", err))
		}
	}
	return denied(fmt.Sprintf(evictionFmt, vmi.Namespace, vmi.Name))
}

func denied(msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: msg, Code: http.StatusTooManyRequests}}
}
