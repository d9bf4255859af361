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
The manager's command line after "manager": the flags the chart owns, then
.Values.flags in name order. YAML numbers reach templates as float64, so a
whole number is printed as an integer (1000, not 1e+03).
*/}}
{{- define "vmobs.args" -}}
{{- $owned := list "leader-elect" "health-probe-bind-address" "metrics-bind-address" -}}
- manager
{{- if .Values.leaderElection.enabled }}
- --leader-elect
{{- end }}
- --health-probe-bind-address=:8081
- --metrics-bind-address=:8443
{{- range $name, $value := .Values.flags }}
{{- if has $name $owned }}
{{- fail (printf "flags.%s: the chart sets --%s itself (see leaderElection.enabled); leave it out of flags" $name $name) }}
{{- end }}
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

{{/* The pod's securityContext: without a fixed UID and GID on OpenShift. */}}
{{- define "vmobs.podSecurityContext" -}}
{{- if .Values.openshift -}}
{{- toYaml (omit .Values.podSecurityContext "runAsUser" "runAsGroup" "fsGroup") -}}
{{- else -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}
{{- end -}}
