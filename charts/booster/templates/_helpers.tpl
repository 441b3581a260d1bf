{{/* The name every object of the release shares; the Service keeps it so agents can
     reach booster-operator.<namespace>.svc. */}}
{{- define "booster.fullname" -}}
{{- if eq .Release.Name "booster" -}}booster-operator{{- else -}}{{ printf "%s-booster-operator" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "booster.labels" -}}
app.kubernetes.io/name: booster
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "booster.selectorLabels" -}}
app.kubernetes.io/name: booster
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "booster.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "booster.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{- define "booster.image" -}}
{{ .image.repository }}:{{ default .appVersion .image.tag }}
{{- end -}}
