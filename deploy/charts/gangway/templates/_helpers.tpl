{{/*
The chart reads deploy/'s manifests (files/, the same files kustomize renders) and adjusts
each object to the values: the release's namespace for gangway-system, the image, replicas
and resources, labels. What kustomize's generators and components do is done here.
*/}}

{{- define "gangway.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels on every object (not on pod templates or selectors: those stay deploy/'s). */}}
{{- define "gangway.labels" -}}
app.kubernetes.io/part-of: gangway
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The manifest files the values choose, as a YAML list. */}}
{{- define "gangway.manifests" -}}
{{- $v := .Values }}
{{- if $v.namespace.create }}
- files/base/namespace.yaml
{{- end }}
{{- if $v.nats.bundled }}
- files/base/nats.yaml
{{- end }}
- files/base/setup.yaml
- files/base/watcher.yaml
- files/base/podgang.yaml
- files/base/admission.yaml
- files/base/validating-webhook.yaml
{{- if $v.metrics.service }}
- files/base/metrics.yaml
{{- end }}
{{- range $key, $backend := $v.backends }}
{{- if $backend.enabled }}
- files/backends/{{ $key }}/backend-{{ $key }}.yaml
{{- end }}
{{- end }}
{{- if $v.kueue.enabled }}
- files/stages/kueue/stage-kueue.yaml
{{- if $v.kueue.topology }}
- files/stages/kueue-topology/stage-kueue-topology.yaml
{{- end }}
{{- end }}
{{- if eq $v.webhook.certificates "cert-manager" }}
- files/components/cert-manager/certificate.yaml
{{- else }}
- files/components/self-signed/webhook-cert.yaml
{{- end }}
{{- if $v.metrics.serviceMonitor }}
- files/components/monitoring/servicemonitor.yaml
{{- end }}
{{- end }}

{{/* The values of one Deployment: watcher, podgang, admission, or a backend's. */}}
{{- define "gangway.knobs" -}}
{{- $name := .name | trimPrefix "gangway-" }}
{{- if hasPrefix "backend-" $name }}
{{- toYaml (index .root.Values.backends (trimPrefix "backend-" $name)) }}
{{- else if hasPrefix "stage-" $name }}
{{- toYaml (index .root.Values (trimPrefix "stage-" $name)) }}
{{- else }}
{{- toYaml (index .root.Values $name) }}
{{- end }}
{{- end }}

{{/*
Adjust one object in place: labels, and for workloads the image pull policy and secrets,
replicas, resources (NATS's too), Jobs named by revision, ``.checksum`` of the
configuration (pods roll when it changes, as kustomize's hashed ConfigMap names make them),
NATS's volume.
*/}}
{{- define "gangway.adjust" -}}
{{- $obj := .obj }}
{{- $root := .root }}
{{- $v := $root.Values }}
{{- $partOf := dict "app.kubernetes.io/part-of" "gangway" }}
{{- $labels := include "gangway.labels" $root | fromYaml }}
{{- $_ := set $obj.metadata "labels" (merge (dict) ($obj.metadata.labels | default dict) $labels) }}
{{- $template := dict }}
{{- if has $obj.kind (list "Deployment" "StatefulSet" "Job") }}
{{- $template = $obj.spec.template }}
{{- else if eq $obj.kind "CronJob" }}
{{- $_ := set $obj.spec.jobTemplate "metadata" (dict "labels" $partOf) }}
{{- $template = $obj.spec.jobTemplate.spec.template }}
{{- end }}
{{- if $template }}
{{- $_ := set $template.metadata "labels" (merge (dict) $template.metadata.labels $partOf) }}
{{- $_ := set $template.metadata "annotations" (dict "gangway.dev/config-checksum" .checksum) }}
{{- range $container := $template.spec.containers }}
{{- if eq $container.image (include "gangway.image" $root) }}
{{- $_ := set $container "imagePullPolicy" $v.image.pullPolicy }}
{{- end }}
{{- end }}
{{- if $v.imagePullSecrets }}
{{- $_ := set $template.spec "imagePullSecrets" $v.imagePullSecrets }}
{{- end }}
{{- if $v.nodeSelector }}
{{- $_ := set $template.spec "nodeSelector" (merge (dict) $v.nodeSelector ($template.spec.nodeSelector | default dict)) }}
{{- end }}
{{- if $v.tolerations }}
{{- $_ := set $template.spec "tolerations" $v.tolerations }}
{{- end }}
{{- if not $v.nats.bundled }}
{{- /* An external bus: no certificate of Gangway's making, and its CA only if given. */}}
{{- $containers := list }}
{{- range $template.spec.containers }}{{ if ne .name "nats-cert" }}{{ $containers = append $containers . }}{{ end }}{{ end }}
{{- $_ := set $template.spec "containers" $containers }}
{{- if not $v.nats.ca }}
{{- range $volume := $template.spec.volumes | default list }}
{{- if $volume.projected }}
{{- $sources := list }}
{{- range $volume.projected.sources }}{{ if not (and .secret (eq .secret.name "gangway-nats-tls")) }}{{ $sources = append $sources . }}{{ end }}{{ end }}
{{- $_ := set $volume.projected "sources" $sources }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $obj.kind "Job" }}
{{- /* A Job's pod template cannot change: each revision runs Jobs of its own (the last
     revision's are deleted as no longer in the release), so an upgrade to a new image
     runs the setup again instead of failing on the old Job. */}}
{{- $_ := set $obj.metadata "name" (printf "%s-r%d" $obj.metadata.name $root.Release.Revision) }}
{{- end }}
{{- if and (eq $obj.kind "Deployment") (ne $obj.metadata.name "gangway-bus-keeper") }}
{{- /* The bus keeper: one small replica, whatever the values (more would do nothing). */}}
{{- $knobs := include "gangway.knobs" (dict "name" $obj.metadata.name "root" $root) | fromYaml }}
{{- $_ := set $obj.spec "replicas" $knobs.replicas }}
{{- $_ := set (index $template.spec.containers 0) "resources" $knobs.resources }}
{{- end }}
{{- if and (eq $obj.kind "StatefulSet") (eq $obj.metadata.name "gangway-nats") }}
{{- $_ := set (index $template.spec.containers 0) "resources" $v.nats.resources }}
{{- $claimTemplate := index $obj.spec.volumeClaimTemplates 0 }}
{{- $_ := set $claimTemplate.metadata "labels" $partOf }}
{{- $claim := $claimTemplate.spec }}
{{- $_ := set $claim.resources.requests "storage" $v.nats.storage.size }}
{{- if $v.nats.storage.storageClassName }}
{{- $_ := set $claim "storageClassName" $v.nats.storage.storageClassName }}
{{- end }}
{{- end }}
{{- if and (eq $obj.kind "ValidatingWebhookConfiguration") (eq $v.webhook.certificates "cert-manager") }}
{{- $inject := printf "%s/gangway-admission" $root.Release.Namespace }}
{{- $_ := set $obj.metadata "annotations" (dict "cert-manager.io/inject-ca-from" $inject) }}
{{- end }}
{{- end }}

{{/* The profiles the configuration enables, as a YAML list: default-scheduler always. */}}
{{- define "gangway.profiles" -}}
{{- $profiles := list "default-scheduler" }}
{{- range .Values.scheduler.profiles }}{{ $profiles = append $profiles .name }}{{ end }}
{{- $profiles | uniq | toYaml }}
{{- end }}

{{/*
Values that cannot work together, said before anything is installed (a wrong type or
choice is values.schema.json's to refuse).
*/}}
{{- define "gangway.check" -}}
{{- $v := .Values }}
{{- if and (not $v.nats.bundled) (not $v.nats.url) }}
{{- fail "nats.url: required when nats.bundled is false (the bus the services connect to)" }}
{{- end }}
{{- $profiles := include "gangway.profiles" . | fromYamlArray }}
{{- range $key, $backend := $v.backends }}
{{- if and $backend.enabled (not (has $backend.profile $profiles)) }}
{{- fail (printf "backends.%s: enabled, but scheduler.profiles has no profile %q for it to serve" $key $backend.profile) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The ConfigMaps kustomize generates: the services' settings, the operator configuration,
NATS's configuration and users (the services' users, and one per backend the
configuration enables, from files/nats-users.yaml), the dashboard.
*/}}
{{- define "gangway.configmaps" -}}
{{- $v := .Values }}
{{- $labels := include "gangway.labels" . }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: gangway-settings
  namespace: {{ .Release.Namespace }}
  labels: {{- $labels | nindent 4 }}
data:
  GANGWAY_NATS_URL: {{ ternary (printf "tls://gangway-nats:4222") $v.nats.url $v.nats.bundled | quote }}
  {{- if or $v.nats.bundled $v.nats.ca }}
  GANGWAY_NATS_CA: /etc/gangway/nats-ca.crt
  {{- end }}
  GANGWAY_CONFIG_FILE: /etc/gangway/operator.yaml
  GANGWAY_STREAMS__REPLICAS: {{ $v.nats.streamReplicas | quote }}
  GANGWAY_LOG_LEVEL: {{ $v.logs.level | upper | quote }}
  GANGWAY_LOG_FORMAT: {{ $v.logs.format | quote }}
  OTEL_EXPORTER_OTLP_ENDPOINT: {{ $v.tracing.otlpEndpoint | quote }}
  {{- range $name, $value := $v.settings }}
  {{ $name }}: {{ $value | toString | quote }}
  {{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gangway-config
  namespace: {{ .Release.Namespace }}
  labels: {{- $labels | nindent 4 }}
data:
  operator.yaml: |
    {{- $operator := dict "scheduler" $v.scheduler }}
    {{- if $v.kueue.enabled }}
    {{- $kueue := dict "enabled" true }}
    {{- if $v.kueue.topology }}{{ $_ := set $kueue "topology" true }}{{ end }}
    {{- $_ := set $operator "kueue" $kueue }}
    {{- end }}
    {{- $operator | toYaml | nindent 4 }}
{{- if $v.nats.bundled }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gangway-nats
  namespace: {{ .Release.Namespace }}
  labels: {{- $labels | nindent 4 }}
data:
  nats.conf: |
    {{- .Files.Get "files/base/nats.conf" | nindent 4 }}
---
{{- $users := .Files.Get "files/nats-users.yaml" | fromYaml }}
{{- $names := include "gangway.profiles" . | fromYamlArray | sortAlpha }}
{{- /* Every entry denies each enabled backend's durable consumer, then the Kueue stage's
     where it is enabled (the generated file says how). */}}
{{- $stage := ternary $users.denied.stage "" $v.kueue.enabled }}
{{- $denied := "" }}
{{- range $names }}{{ $denied = print $denied ($users.denied.backend | replace $users.placeholder.name .) }}{{ end }}
{{- $entries := dict }}
{{- range $user, $entry := $users.services }}
{{- $_ := set $entries $user ($entry | replace $users.denied.services (print $denied $stage)) }}
{{- end }}
{{- if $v.kueue.enabled }}
{{- $_ := set $entries "stage-kueue" ($users.stage | replace $users.denied.stage_entry (print $denied $users.denied.stage_own)) }}
{{- end }}
{{- range $name := $names }}
{{- $mine := "" }}
{{- range $names }}{{ $mine = print $mine (ternary $users.denied.own $users.denied.backend (eq . $name) | replace $users.placeholder.name .) }}{{ end }}
{{- $entry := $users.backend | replace $users.denied.entry (print $mine $stage) | replace $users.placeholder.name $name | replace $users.placeholder.upper ($name | upper | replace "-" "_") }}
{{- $_ := set $entries (printf "backend-%s" $name) $entry }}
{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: gangway-nats-auth
  namespace: {{ .Release.Namespace }}
  labels: {{- $labels | nindent 4 }}
data:
  nats-users.conf: |
    authorization {
      users = [
    {{- range $user := keys $entries | sortAlpha }}
    {{- index $entries $user | nindent 4 }}
    {{- end }}
      ]
    }
{{- end }}
{{- if and (not $v.nats.bundled) $v.nats.ca }}
---
# The external bus's CA, where the services' volumes take it from (as the bundled bus's).
apiVersion: v1
kind: Secret
metadata:
  name: gangway-nats-tls
  namespace: {{ .Release.Namespace }}
  labels: {{- $labels | nindent 4 }}
data:
  ca.crt: {{ $v.nats.ca | b64enc | quote }}
{{- end }}
{{- if $v.metrics.dashboard }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gangway-dashboard
  namespace: {{ .Release.Namespace }}
  labels:
    {{- $labels | nindent 4 }}
    grafana_dashboard: "1"
data:
  gangway-dashboard.json: |
    {{- .Files.Get "files/components/monitoring/gangway-dashboard.json" | nindent 4 }}
{{- end }}
{{- end }}
