{{/*
The prefix of every object's name: the release name when it contains the
chart's name ("vmobs"), else <release>-vmobs, so that `helm install vmobs`
names the objects as config/default does.
*/}}
{{- define "vmobs.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vmobs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* name of one object: the prefix, a dash and a suffix, at most 63 characters. */}}
{{- define "vmobs.objectName" -}}
{{- printf "%s-%s" (include "vmobs.fullname" .root) .suffix | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vmobs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vmobs.objectName" (dict "root" . "suffix" "controller-manager")) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "vmobs.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "vmobs.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: vmobs
{{- end -}}

{{/* Labels that tell this release's objects from another release's. */}}
{{- define "vmobs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vmobs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The manager's pods, as the Deployment and the metrics Service select them. */}}
{{- define "vmobs.podSelectorLabels" -}}
{{ include "vmobs.selectorLabels" . }}
control-plane: controller-manager
{{- end -}}

{{- define "vmobs.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
The flags the first-class values set (watchNamespaces, vmSelector,
prometheus.url and its credentials, guestProbe, policy, logLevel), as a map
from the flag's name to its value, as .Values.flags has them. An empty value
sets nothing, so the manager's default holds.
*/}}
{{- define "vmobs.valueFlags" -}}
{{- $f := dict -}}
{{- with .Values.watchNamespaces }}{{ $_ := set $f "namespace" . }}{{ end -}}
{{- with .Values.vmSelector }}{{ $_ := set $f "vm-selector" . }}{{ end -}}
{{- with .Values.logLevel }}{{ $_ := set $f "zap-log-level" . }}{{ end -}}
{{- with .Values.prometheus.url }}{{ $_ := set $f "prometheus-url" . }}{{ end -}}
{{- with .Values.prometheus.bearerToken.secretName }}{{ $_ := set $f "prometheus-bearer-token-file" (printf "%s/%s" (include "vmobs.prometheusTokenDir" $) $.Values.prometheus.bearerToken.key) }}{{ end -}}
{{- if include "vmobs.prometheusCASource" . }}{{ $_ := set $f "prometheus-ca-file" (printf "%s/%s" (include "vmobs.prometheusCADir" .) .Values.prometheus.ca.key) }}{{ end -}}
{{- with .Values.guestProbe.interval }}{{ $_ := set $f "guest-probe-interval" . }}{{ end -}}
{{- with .Values.guestProbe.timeout }}{{ $_ := set $f "guest-probe-timeout" . }}{{ end -}}
{{- if not (kindIs "invalid" .Values.policy.guestAgentExpected) }}{{ $_ := set $f "guest-agent-expected" .Values.policy.guestAgentExpected }}{{ end -}}
{{- with .Values.policy.heartbeatTimeout }}{{ $_ := set $f "heartbeat-timeout" . }}{{ end -}}
{{- with .Values.policy.schedulingTimeout }}{{ $_ := set $f "scheduling-timeout" . }}{{ end -}}
{{- with .Values.policy.migrationPhaseTimeout }}{{ $_ := set $f "migration-phase-timeout" . }}{{ end -}}
{{- toYaml $f -}}
{{- end -}}

{{- define "vmobs.prometheusTokenDir" -}}/var/run/secrets/vmobs/prometheus-token{{- end -}}
{{- define "vmobs.prometheusCADir" -}}/var/run/secrets/vmobs/prometheus-ca{{- end -}}

{{/* "configMap" or "secret": where prometheus.ca comes from; empty for none. */}}
{{- define "vmobs.prometheusCASource" -}}
{{- if and .Values.prometheus.ca.configMapName .Values.prometheus.ca.secretName -}}
{{- fail "prometheus.ca: set configMapName or secretName, not both" -}}
{{- else if .Values.prometheus.ca.configMapName -}}configMap
{{- else if .Values.prometheus.ca.secretName -}}secret
{{- end -}}
{{- end -}}

{{/*
The manager's command line after "manager": the flags the chart owns, then
the first-class values' flags and .Values.flags, in name order. A flag set
both ways is refused: which would win is not obvious. YAML numbers reach
templates as float64, so a whole number is printed as an integer (1000, not
1e+03).
*/}}
{{- define "vmobs.args" -}}
{{- $owned := list "leader-elect" "health-probe-bind-address" "metrics-bind-address" -}}
{{- $flags := include "vmobs.valueFlags" . | fromYaml -}}
{{- range $name, $value := .Values.flags }}
{{- if has $name $owned }}
{{- fail (printf "flags.%s: the chart sets --%s itself (see leaderElection.enabled); leave it out of flags" $name $name) }}
{{- end }}
{{- if hasKey $flags $name }}
{{- fail (printf "flags.%s: a first-class value of the chart sets --%s (docs/helm.md, \"Values\"); set it there, not in flags" $name $name) }}
{{- end }}
{{- $_ := set $flags $name $value }}
{{- end }}
- manager
{{- if .Values.leaderElection.enabled }}
- --leader-elect
{{- end }}
- --health-probe-bind-address=:8081
- --metrics-bind-address=:8443
{{- range $name, $value := $flags }}
{{- if not (kindIs "invalid" $value) }}
{{- range (kindIs "slice" $value | ternary $value (list $value)) }}
{{- $v := . }}
{{- if and (kindIs "float64" $v) (eq $v (floor $v)) }}
{{- $v = int64 $v }}
{{- end }}
- {{ printf "--%s=%v" $name $v | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
"true" when the chart installs on OpenShift: openshift set to true, or left
null and the API server serving OpenShift's route.openshift.io/v1 (`helm
template` without a cluster: --api-versions route.openshift.io/v1).
*/}}
{{- define "vmobs.openshift" -}}
{{- if kindIs "invalid" .Values.openshift -}}
{{- if .Capabilities.APIVersions.Has "route.openshift.io/v1" }}true{{ end -}}
{{- else if .Values.openshift -}}true
{{- end -}}
{{- end -}}

{{/* The pod's securityContext: without a fixed UID and GID on OpenShift. */}}
{{- define "vmobs.podSecurityContext" -}}
{{- if include "vmobs.openshift" . -}}
{{- toYaml (omit .Values.podSecurityContext "runAsUser" "runAsGroup" "fsGroup") -}}
{{- else -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}
{{- end -}}
