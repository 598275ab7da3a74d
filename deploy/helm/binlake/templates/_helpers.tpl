{{/* Names and labels. */}}
{{- define "binlake.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "binlake.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "binlake.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "binlake.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* binlake.selector: the labels selecting one component's pods; call with (list $ "capture"). */}}
{{- define "binlake.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "binlake.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* binlake.serviceAccountName: one component's account; call with (list $ "capture"). */}}
{{- define "binlake.serviceAccountName" -}}
{{- $root := index . 0 }}{{ $c := index . 1 }}{{ $sa := (index $root.Values $c).serviceAccount }}
{{- if $sa.create }}
{{- default (printf "%s-%s" (include "binlake.fullname" $root) $c) $sa.name }}
{{- else }}
{{- required (printf "%s.serviceAccount.name is required when %s.serviceAccount.create is false" $c $c) $sa.name }}
{{- end }}
{{- end }}

{{/* binlake.opsEnv sets the metrics and pprof addresses in the env map; call with (list $env "CAPTURE" $componentValues). */}}
{{- define "binlake.opsEnv" -}}
{{- $env := index . 0 }}{{ $p := index . 1 }}{{ $v := index . 2 }}
{{- $_ := set $env (printf "%s_METRICS_ADDR" $p) (printf "%s:%d" $v.metricsBindAddress (int $v.metricsPort)) }}
{{- if $v.pprof.enabled }}
{{- if eq (int $v.pprof.port) (int $v.metricsPort) }}
{{- fail (printf "%s.pprof.port must differ from %s.metricsPort: the profiles are never served on the metrics port" (lower $p) (lower $p)) }}
{{- end }}
{{- $_ := set $env (printf "%s_PPROF_ADDR" $p) (printf "%s:%d" $v.pprof.bindAddress (int $v.pprof.port)) }}
{{- end }}
{{- end }}

{{- define "binlake.image" -}}
{{- $img := index . 0 -}}
{{- printf "%s:%s" $img.repository (default (index . 1).Chart.AppVersion $img.tag) }}
{{- end }}

{{/*
binlake.str prints a value as an environment value: integers without an
exponent (values files hold numbers as float64), everything else as text.
*/}}
{{- define "binlake.str" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}

{{/*
binlake.kafkaEnv: the Kafka settings shared by both binaries, as a YAML map
of env name to string; call with (list $ "CAPTURE").
*/}}
{{- define "binlake.kafkaEnv" -}}
{{- $root := index . 0 }}{{ $p := index . 1 }}{{ $k := $root.Values.kafka }}
{{- if $k.brokers }}
{{ $p }}_KAFKA_BROKERS: {{ $k.brokers | quote }}
{{- end }}
{{- if $k.tls }}
{{ $p }}_KAFKA_TLS: "true"
{{- end }}
{{- if $k.tlsServerName }}
{{ $p }}_KAFKA_TLS_SERVER_NAME: {{ $k.tlsServerName | quote }}
{{- end }}
{{- if $k.tlsSecret.name }}
{{- if $k.tlsSecret.caKey }}
{{ $p }}_KAFKA_TLS_CA_FILE: {{ printf "/var/run/secrets/binlake/kafka-tls/%s" $k.tlsSecret.caKey | quote }}
{{- end }}
{{- if $k.tlsSecret.certKey }}
{{ $p }}_KAFKA_TLS_CERT_FILE: {{ printf "/var/run/secrets/binlake/kafka-tls/%s" $k.tlsSecret.certKey | quote }}
{{ $p }}_KAFKA_TLS_KEY_FILE: {{ printf "/var/run/secrets/binlake/kafka-tls/%s" (required "kafka.tlsSecret.keyKey is required with certKey" $k.tlsSecret.keyKey) | quote }}
{{- end }}
{{- end }}
{{- if and $k.sasl.mechanism (ne $k.sasl.mechanism "none") }}
{{ $p }}_KAFKA_SASL_MECHANISM: {{ $k.sasl.mechanism | quote }}
{{- end }}
{{- if $k.sasl.username }}
{{ $p }}_KAFKA_SASL_USERNAME: {{ $k.sasl.username | quote }}
{{- end }}
{{- if $root.Values.schemaRegistryURL }}
{{ $p }}_SCHEMA_REGISTRY_URL: {{ $root.Values.schemaRegistryURL | quote }}
{{- end }}
{{- with $root.Values.schemaRegistryAuth }}{{ if .username }}
{{ $p }}_SCHEMA_REGISTRY_USERNAME: {{ .username | quote }}
{{- end }}{{ end }}
{{ $p }}_LOG_FORMAT: {{ $root.Values.logFormat | quote }}
{{ $p }}_LOG_LEVEL: {{ $root.Values.logLevel | quote }}
{{- if $root.Values.awsRegion }}
AWS_REGION: {{ $root.Values.awsRegion | quote }}
{{- end }}
{{- end }}

{{/*
binlake.kafkaSecrets: the Kafka and schema registry secret files (and the
registry's CA bundle, passed the same way) as a YAML list of
{env, secret, key, dir}; call with (list $ "CAPTURE").
*/}}
{{- define "binlake.kafkaSecrets" -}}
{{- $root := index . 0 }}{{ $p := index . 1 }}{{ $k := $root.Values.kafka }}
{{- if $k.sasl.passwordSecret.name }}
- {env: {{ printf "%s_KAFKA_SASL_PASSWORD" $p }}, secret: {{ $k.sasl.passwordSecret.name | quote }}, key: {{ $k.sasl.passwordSecret.key | quote }}, dir: kafka-sasl-password}
{{- end }}
{{- with $root.Values.schemaRegistryAuth }}
{{- if and .passwordSecret.name .tokenSecret.name }}
{{- fail "set only one of schemaRegistryAuth.passwordSecret and schemaRegistryAuth.tokenSecret" }}
{{- end }}
{{- if .passwordSecret.name }}
- {env: {{ printf "%s_SCHEMA_REGISTRY_PASSWORD" $p }}, secret: {{ .passwordSecret.name | quote }}, key: {{ .passwordSecret.key | quote }}, dir: registry-password}
{{- end }}
{{- if .tokenSecret.name }}
- {env: {{ printf "%s_SCHEMA_REGISTRY_TOKEN" $p }}, secret: {{ .tokenSecret.name | quote }}, key: {{ .tokenSecret.key | quote }}, dir: registry-token}
{{- end }}
{{- if .caSecret.name }}
- {env: {{ printf "%s_SCHEMA_REGISTRY_CA" $p }}, secret: {{ .caSecret.name | quote }}, key: {{ .caSecret.key | quote }}, dir: registry-ca}
{{- end }}
{{- end }}
{{- end }}

{{/*
binlake.checkSettings fails on a `settings` entry that is not a setting of
the binary, is a secret, or is the metrics address the chart sets. Call
with (dict "settings" $map "prefix" "CAPTURE" "where" "capture.settings").
*/}}
{{- define "binlake.checkSettings" -}}
{{- $p := .prefix }}
{{- range $name, $_ := .settings }}
{{- if not (or (hasPrefix (printf "%s_" $p) $name) (hasPrefix "AWS_" $name)) }}
{{- fail (printf "%s: %s is not a setting of %s: they are named %s_* (see %s --help)" $.where $name (lower $p) $p (lower $p)) }}
{{- end }}
{{- if or (hasSuffix "_PASSWORD" $name) (hasSuffix "_CREDENTIAL" $name) (hasSuffix "_TOKEN" $name) (hasSuffix "_FILE" $name) (hasSuffix "_SECRET_ACCESS_KEY" $name) }}
{{- fail (printf "%s: %s is a secret or a file: use the chart's *Secret values, which mount secrets as files" $.where $name) }}
{{- end }}
{{- if eq $name (printf "%s_METRICS_ADDR" $p) }}
{{- fail (printf "%s: %s is set by the chart from metricsPort (the probes use that port)" $.where $name) }}
{{- end }}
{{- if or (eq $name (printf "%s_PPROF" $p)) (eq $name (printf "%s_PPROF_ADDR" $p)) }}
{{- fail (printf "%s: %s: use %s.pprof, which serves the profiles on a port of their own" $.where $name (lower $p)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
binlake.envList renders the env of a container: the settings (first-class
values merged with `settings`) sorted by name, then each secret as
<VAR>_FILE naming its mounted file. Call with (dict "env" $map "secrets" $list).
*/}}
{{- define "binlake.envList" -}}
{{- range $name := keys .env | sortAlpha }}
- name: {{ $name }}
  value: {{ include "binlake.str" (index $.env $name) | quote }}
{{- end }}
{{- range .secrets }}
- name: {{ .env }}_FILE
  value: {{ printf "/var/run/secrets/binlake/%s/%s" .dir .key | quote }}
{{- end }}
{{- end }}

{{/* binlake.secretMounts: volumeMounts of the secret files; call with the list. */}}
{{- define "binlake.secretMounts" -}}
{{- range . }}
- name: secret-{{ .dir }}
  mountPath: /var/run/secrets/binlake/{{ .dir }}
  readOnly: true
{{- end }}
{{- end }}

{{/* binlake.secretVolumes: volumes of the secret files; call with the list. */}}
{{- define "binlake.secretVolumes" -}}
{{- range . }}
- name: secret-{{ .dir }}
  secret:
    secretName: {{ .secret }}
    defaultMode: 0440
    items:
      - key: {{ .key }}
        path: {{ .key }}
{{- end }}
{{- end }}

{{/* binlake.kafkaTLSVolume: the Kafka TLS files, if any; returns mounts or volumes by (list $ "mounts"|"volumes"). */}}
{{- define "binlake.kafkaTLS" -}}
{{- $root := index . 0 }}{{ $k := $root.Values.kafka }}
{{- if $k.tlsSecret.name }}
{{- if eq (index . 1) "mounts" }}
- name: kafka-tls
  mountPath: /var/run/secrets/binlake/kafka-tls
  readOnly: true
{{- else }}
- name: kafka-tls
  secret:
    secretName: {{ $k.tlsSecret.name }}
    defaultMode: 0440
{{- end }}
{{- end }}
{{- end }}

{{/* binlake.probes: liveness on /healthz and readiness on /readyz at the metrics port; call with the component's values. */}}
{{- define "binlake.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  {{- toYaml .livenessProbe | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  {{- toYaml .readinessProbe | nindent 2 }}
{{- end }}
