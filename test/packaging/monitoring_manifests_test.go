package packaging

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/vmobs/vmobs/internal/dashboards"
	"github.com/vmobs/vmobs/test/support"
)

const (
	metricsService = "vmobs-controller-manager-metrics"
	metricsCertDir = "/var/run/secrets/vmobs/metrics-certs"
)

func str(o *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(o.Object, path...)
	return s
}

// endpoint is the ServiceMonitor's one endpoint.
func endpoint(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	sm := mustFind(t, objs, "ServiceMonitor", "vmobs-controller-manager-metrics-monitor")
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v", eps)
	}
	return eps[0].(map[string]any)
}

func nested(m map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(m, path...)
	return s
}

// servesCertFrom checks that the manager reads its metrics certificate
// from the Secret secret, mounted where --metrics-cert-dir points.
func servesCertFrom(t *testing.T, objs []*unstructured.Unstructured, secret string) {
	t.Helper()
	pod := convert[appsv1.Deployment](t, mustFind(t, objs, "Deployment", "vmobs-controller-manager")).Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "--metrics-cert-dir="+metricsCertDir) {
		t.Errorf("manager args %v lack --metrics-cert-dir=%s", c.Args, metricsCertDir)
	}
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == metricsCertDir })
	if i < 0 || !c.VolumeMounts[i].ReadOnly {
		t.Fatalf("no read-only mount at %s: %v", metricsCertDir, c.VolumeMounts)
	}
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if j < 0 || pod.Volumes[j].Secret == nil || pod.Volumes[j].Secret.SecretName != secret {
		t.Errorf("the certificate volume is not Secret %s: %+v", secret, pod.Volumes)
	}
}

// TestMonitoringManifests checks what ties the monitoring objects together
// across config/prometheus and its overlays: the scrape's token and the
// Secret holding it, the certificate each TLS overlay issues and the one
// the manager serves and the ServiceMonitor verifies, OpenShift's
// namespace label and Role, kube-prometheus-stack's release label.
func TestMonitoringManifests(t *testing.T) {
	prom := render(t, "config/prometheus")
	ep := endpoint(t, prom)
	if _, ok := ep["bearerTokenFile"]; ok {
		t.Error("bearerTokenFile: OpenShift's user-workload monitoring refuses it")
	}
	if nested(ep, "authorization", "type") != "Bearer" {
		t.Errorf("authorization %v", ep["authorization"])
	}
	secret := convert[corev1.Secret](t, mustFind(t, prom, "Secret", nested(ep, "authorization", "credentials", "name")))
	if secret.Type != corev1.SecretTypeServiceAccountToken || nested(ep, "authorization", "credentials", "key") != corev1.ServiceAccountTokenKey {
		t.Errorf("the credentials are not a ServiceAccount token: type %s, key %q", secret.Type, nested(ep, "authorization", "credentials", "key"))
	}
	sa := mustFind(t, prom, "ServiceAccount", secret.Annotations[corev1.ServiceAccountNameKey])
	crb := convert[rbacv1.ClusterRoleBinding](t, mustFind(t, prom, "ClusterRoleBinding", "vmobs-metrics-reader"))
	def := render(t, "config/default")
	mustFind(t, def, "ClusterRole", crb.RoleRef.Name)
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa.GetName() || crb.Subjects[0].Namespace != support.SystemNS {
		t.Errorf("ClusterRoleBinding %s binds %+v, not the token's ServiceAccount %s", crb.Name, crb.Subjects, sa.GetName())
	}
	if str(mustFind(t, prom, "ServiceMonitor", "vmobs-controller-manager-metrics-monitor"), "spec", "jobLabel") != "app.kubernetes.io/name" {
		t.Error("the ServiceMonitor's jobLabel is not app.kubernetes.io/name: VMObservationScrapeFailed selects job=vmobs")
	}
	svc := convert[corev1.Service](t, mustFind(t, def, "Service", metricsService))
	if svc.Labels["app.kubernetes.io/name"] != "vmobs" {
		t.Errorf("metrics Service labels %v", svc.Labels)
	}
	serverName := metricsService + "." + support.SystemNS + ".svc"

	t.Run("certmanager", func(t *testing.T) {
		objs := render(t, "config/certmanager")
		cert := mustFind(t, objs, "Certificate", "vmobs-metrics-cert")
		names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		if !slices.Contains(names, serverName) {
			t.Errorf("Certificate dnsNames %v lack %s", names, serverName)
		}
		mustFind(t, objs, str(cert, "spec", "issuerRef", "kind"), str(cert, "spec", "issuerRef", "name"))
		secret := str(cert, "spec", "secretName")
		servesCertFrom(t, objs, secret)
		ep := endpoint(t, objs)
		if nested(ep, "tlsConfig", "serverName") != serverName || nested(ep, "tlsConfig", "ca", "secret", "name") != secret ||
			nested(ep, "tlsConfig", "ca", "secret", "key") != "ca.crt" {
			t.Errorf("tlsConfig %v: want the CA of Secret %s for %s", ep["tlsConfig"], secret, serverName)
		}
		if _, skip, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); skip {
			t.Error("insecureSkipVerify with a real certificate")
		}
	})

	t.Run("openshift", func(t *testing.T) {
		objs := render(t, "config/openshift")
		ns := mustFind(t, objs, "Namespace", support.SystemNS)
		if ns.GetLabels()["openshift.io/cluster-monitoring"] != "true" {
			t.Errorf("namespace labels %v", ns.GetLabels())
		}
		secret := mustFind(t, objs, "Service", metricsService).GetAnnotations()["service.beta.openshift.io/serving-cert-secret-name"]
		if secret == "" {
			t.Fatal("the metrics Service does not ask the service CA for a certificate")
		}
		servesCertFrom(t, objs, secret)
		ep := endpoint(t, objs)
		cm := mustFind(t, objs, "ConfigMap", nested(ep, "tlsConfig", "ca", "configMap", "name"))
		if cm.GetAnnotations()["service.beta.openshift.io/inject-cabundle"] != "true" || nested(ep, "tlsConfig", "ca", "configMap", "key") != "service-ca.crt" ||
			nested(ep, "tlsConfig", "serverName") != serverName {
			t.Errorf("tlsConfig %v, ConfigMap annotations %v", ep["tlsConfig"], cm.GetAnnotations())
		}
		rb := convert[rbacv1.RoleBinding](t, mustFind(t, objs, "RoleBinding", "vmobs-prometheus-k8s"))
		if rb.Namespace != support.SystemNS || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "prometheus-k8s" || rb.Subjects[0].Namespace != "openshift-monitoring" {
			t.Errorf("RoleBinding %+v", rb)
		}
		role := convert[rbacv1.Role](t, mustFind(t, objs, "Role", rb.RoleRef.Name))
		for _, res := range []string{"services", "endpoints", "pods", "endpointslices"} {
			if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
			}) {
				t.Errorf("prometheus-k8s cannot list and watch %s: %+v", res, role.Rules)
			}
		}
	})

	t.Run("grafana", func(t *testing.T) {
		objs := render(t, "config/grafana")
		cm := convert[corev1.ConfigMap](t, mustFind(t, objs, "ConfigMap", "vmobs-grafana-dashboards"))
		if cm.Labels["grafana_dashboard"] != "1" {
			t.Errorf("labels %v: Grafana's sidecar loads ConfigMaps labelled grafana_dashboard=1", cm.Labels)
		}
		var d struct {
			UID string `json:"uid"`
		}
		if err := json.Unmarshal([]byte(cm.Data["vmobs-fleet.json"]), &d); err != nil || d.UID != dashboards.FleetUID {
			t.Errorf("vmobs-fleet.json in the ConfigMap: uid %q, %v", d.UID, err)
		}
	})

	t.Run("kube-prometheus-stack", func(t *testing.T) {
		objs := render(t, "config/kube-prometheus-stack")
		for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
			for _, o := range objs {
				if o.GetKind() == kind && o.GetLabels()["release"] == "" {
					t.Errorf("%s/%s has no release label", kind, o.GetName())
				}
			}
		}
		sel, _, _ := unstructured.NestedStringMap(mustFind(t, objs, "ServiceMonitor", "vmobs-controller-manager-metrics-monitor").Object, "spec", "selector", "matchLabels")
		for k := range sel {
			if strings.HasPrefix(k, "release") {
				t.Errorf("the release label went into the ServiceMonitor's selector: %v", sel)
			}
		}

		// Another release's name, set as docs/monitoring.md says: an
		// overlay of the user's own with its labels.
		// kustomize takes a base by a relative path only.
		dir := t.TempDir()
		base, err := filepath.Rel(dir, filepath.Join(support.RepoRoot(t), "config", "kube-prometheus-stack"))
		if err != nil {
			t.Fatal(err)
		}
		overlay := "resources:\n- " + filepath.ToSlash(base) + "\nlabels:\n- pairs:\n    release: monitoring\n"
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
			t.Fatal(err)
		}
		resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			t.Fatalf("kustomize build of an overlay setting the release: %v", err)
		}
		var relabelled int
		for _, r := range resMap.Resources() {
			if k := r.GetKind(); k == "ServiceMonitor" || k == "PrometheusRule" {
				relabelled++
				if r.GetLabels()["release"] != "monitoring" {
					t.Errorf("%s/%s: labels %v, want release=monitoring", k, r.GetName(), r.GetLabels())
				}
			}
		}
		if relabelled != 2 {
			t.Errorf("the overlay renders %d ServiceMonitors and PrometheusRules, want 2", relabelled)
		}
	})
}
