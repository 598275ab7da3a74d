//go:build integration

// Package helmchart checks the Helm chart deploy/helm/binlake: every
// manifest `helm template` renders from the values files in its ci/
// folder decodes strictly into the Kubernetes API types (an unknown or
// misspelt field fails), and the rendered pods run the binaries the way
// they must run: capture one replica with strategy Recreate per source,
// secrets only as mounted files named by <VAR>_FILE, probes on the metrics
// port the binary listens on, and only environment variables that are
// real settings of the binary (the `(env X)` names of its --help), which
// together pass its --check-config.
package helmchart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/binlake/binlake/test/testenv"
)

const (
	repo  = "../.."
	chart = repo + "/deploy/helm/binlake"
)

// binary is what the test knows of capture or ingest: its settings (the
// `(env X)` names of --help), its secrets (read from X or X_FILE) and the
// built executable.
type binary struct {
	name     string
	exe      string
	settings map[string]bool
	secrets  map[string]bool
}

// build builds capture and ingest and reads their settings from --help
// and their secret names from the Secret calls of their config code.
func build(t *testing.T) map[string]*binary {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]*binary{}
	envRe := regexp.MustCompile(`\(env ([A-Z0-9_]+)\)`)
	secretRe := regexp.MustCompile(`\.Secret\(&[^,]+, "([a-z0-9-]+)"[,)]`)
	for _, name := range []string{"capture", "ingest"} {
		b := &binary{name: name, exe: filepath.Join(dir, name), settings: map[string]bool{}, secrets: map[string]bool{}}
		cmd := exec.Command("go", "build", "-o", b.exe, "./"+name)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", name, err, out)
		}
		help, _ := exec.Command(b.exe, "--help").CombinedOutput() // exits 0 or 2 by flag package version
		for _, m := range envRe.FindAllStringSubmatch(string(help), -1) {
			b.settings[m[1]] = true
		}
		if len(b.settings) < 20 {
			t.Fatalf("%s --help names only %d (env X) settings:\n%s", name, len(b.settings), help)
		}
		// The settings live in the binary's packages (config, kafkasec,
		// registrysec, lake …), not only in package main.
		prefix := strings.ToUpper(name) + "_"
		err := filepath.WalkDir(filepath.Join(repo, name), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range secretRe.FindAllStringSubmatch(string(src), -1) {
				b.secrets[prefix+strings.ToUpper(strings.ReplaceAll(m[1], "-", "_"))] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.secrets) == 0 {
			t.Fatalf("found no Secret settings in %s/ (its non-test .go files)", name)
		}
		bins[name] = b
	}
	return bins
}

// manifests is one rendering of the chart, decoded into typed objects.
type manifests struct {
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	serviceAccounts []*corev1.ServiceAccount
	pdbs            []*policyv1.PodDisruptionBudget
	pvcs            []*corev1.PersistentVolumeClaim
	serviceMonitors []*monitoringv1.ServiceMonitor
	netpols         []*networkingv1.NetworkPolicy
}

// helmTemplate renders the chart with a values file, or returns helm's
// error output.
func helmTemplate(t *testing.T, helm, values string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(helm, "template", "rel", chart, "--namespace", "cdc", "-f", values)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, errOut.String())
	}
	return out.String(), nil
}

// decodeStrict decodes every document of a rendering into the type its
// apiVersion and kind name, failing on unknown fields and unknown kinds.
func decodeStrict(t *testing.T, rendered string) manifests {
	t.Helper()
	var m manifests
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(rendered, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("document %d is not YAML: %v\n%s", i, err, doc)
		}
		var tm struct{ APIVersion, Kind string }
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatal(err)
		}
		var obj any
		switch tm.APIVersion + "/" + tm.Kind {
		case "apps/v1/Deployment":
			d := &appsv1.Deployment{}
			m.deployments, obj = append(m.deployments, d), d
		case "v1/Service":
			s := &corev1.Service{}
			m.services, obj = append(m.services, s), s
		case "v1/ServiceAccount":
			s := &corev1.ServiceAccount{}
			m.serviceAccounts, obj = append(m.serviceAccounts, s), s
		case "v1/PersistentVolumeClaim":
			p := &corev1.PersistentVolumeClaim{}
			m.pvcs, obj = append(m.pvcs, p), p
		case "policy/v1/PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			m.pdbs, obj = append(m.pdbs, p), p
		case "networking.k8s.io/v1/NetworkPolicy":
			n := &networkingv1.NetworkPolicy{}
			m.netpols, obj = append(m.netpols, n), n
		case "monitoring.coreos.com/v1/ServiceMonitor":
			s := &monitoringv1.ServiceMonitor{}
			m.serviceMonitors, obj = append(m.serviceMonitors, s), s
		default:
			t.Fatalf("document %d: no type for apiVersion %q kind %q:\n%s", i, tm.APIVersion, tm.Kind, doc)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			t.Fatalf("document %d (%s %s) does not decode strictly: %v\n%s", i, tm.APIVersion, tm.Kind, err, doc)
		}
		if dec.More() {
			t.Fatalf("document %d has trailing data", i)
		}
	}
	return m
}

// values is the part of a values file the assertions compare with.
type values struct {
	Capture struct {
		ServiceAccount serviceAccountValues `json:"serviceAccount"`
		Sources        []struct {
			Name string `json:"name"`
		} `json:"sources"`
	} `json:"capture"`
	Ingest struct {
		ServiceAccount      serviceAccountValues `json:"serviceAccount"`
		Replicas            *int32               `json:"replicas"`
		PodDisruptionBudget *struct {
			Enabled bool `json:"enabled"`
		} `json:"podDisruptionBudget"`
	} `json:"ingest"`
	ServiceMonitor struct {
		Enabled bool `json:"enabled"`
	} `json:"serviceMonitor"`
}

type serviceAccountValues struct {
	Annotations map[string]string `json:"annotations"`
}

func readValues(t *testing.T, path string) values {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v values
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestChartRendersValidManifests renders the chart with each values file
// under ci/ and checks the manifests.
func TestChartRendersValidManifests(t *testing.T) {
	helm := testenv.Tool(t, "helm")
	files, _ := filepath.Glob(filepath.Join(chart, "ci", "*.yaml"))
	if len(files) < 3 {
		t.Fatalf("want at least 3 values files in %s/ci, found %v", chart, files)
	}
	bins := build(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if out, err := exec.Command(helm, "lint", "--strict", chart, "-f", f).CombinedOutput(); err != nil {
				t.Errorf("helm lint --strict -f %s: %v\n%s", f, err, out)
			}
			rendered, err := helmTemplate(t, helm, f)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			m := decodeStrict(t, rendered)
			v := readValues(t, f)
			checkDeployments(t, m, v, bins)
			checkOthers(t, m, v)
		})
	}
}

func checkDeployments(t *testing.T, m manifests, v values, bins map[string]*binary) {
	var captures, ingests []*appsv1.Deployment
	for _, d := range m.deployments {
		switch d.Spec.Template.Labels["app.kubernetes.io/component"] {
		case "capture":
			captures = append(captures, d)
		case "ingest":
			ingests = append(ingests, d)
		default:
			t.Errorf("deployment %s has no component label", d.Name)
		}
	}
	if len(captures) != len(v.Capture.Sources) {
		t.Errorf("%d capture deployments, want one per source (%d)", len(captures), len(v.Capture.Sources))
	}
	for _, d := range captures {
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			t.Errorf("%s: replicas %v, want 1", d.Name, d.Spec.Replicas)
		}
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("%s: strategy %q, want Recreate", d.Name, d.Spec.Strategy.Type)
		}
	}
	if len(ingests) != 1 {
		t.Fatalf("%d ingest deployments, want 1", len(ingests))
	}
	if want := v.Ingest.Replicas; want != nil && *ingests[0].Spec.Replicas != *want {
		t.Errorf("ingest replicas %d, want %d", *ingests[0].Spec.Replicas, *want)
	}
	for _, d := range m.deployments {
		if sel, err := metav1Selector(d); err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("%s: selector %v does not match its pod labels %v (%v)", d.Name, d.Spec.Selector, d.Spec.Template.Labels, err)
		}
		checkPod(t, d, bins)
	}
}

func metav1Selector(d *appsv1.Deployment) (labels.Selector, error) {
	return labels.ValidatedSelectorFromSet(d.Spec.Selector.MatchLabels)
}

// checkPod checks one Deployment's pod against its binary.
func checkPod(t *testing.T, d *appsv1.Deployment, bins map[string]*binary) {
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", d.Name, len(pod.Containers))
	}
	c := pod.Containers[0]
	b := bins[c.Name]
	if b == nil {
		t.Fatalf("%s: container %q is neither capture nor ingest", d.Name, c.Name)
	}
	if len(c.Args) > 0 || len(c.Command) > 0 {
		t.Errorf("%s: container has command %v args %v; settings go in env only", d.Name, c.Command, c.Args)
	}
	psc, csc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("%s: pod does not set runAsNonRoot", d.Name)
	}
	if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
		csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Errorf("%s: container is not read-only root without privilege escalation: %+v", d.Name, csc)
	}
	if c.Resources.Requests.Memory().IsZero() {
		t.Errorf("%s: no memory request", d.Name)
	}

	// Settings are real, secrets are files.
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	vols := map[string]corev1.Volume{}
	for _, vol := range pod.Volumes {
		vols[vol.Name] = vol
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s: env %s set twice", d.Name, e.Name)
		}
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			t.Errorf("%s: env %s comes from valueFrom; secrets must be mounted files named by <VAR>_FILE", d.Name, e.Name)
		}
		if b.secrets[e.Name] {
			t.Errorf("%s: secret %s is a plain env value; it must be %s_FILE", d.Name, e.Name, e.Name)
		}
		if regexp.MustCompile(`^[0-9.]+e[+-]?[0-9]+$`).MatchString(e.Value) {
			t.Errorf("%s: env %s=%s is a number in exponent form", d.Name, e.Name, e.Value)
		}
		switch secret, isFile := strings.CutSuffix(e.Name, "_FILE"); {
		case isFile && b.secrets[secret]:
			checkSecretFile(t, d.Name, e, mounts, vols)
		case b.settings[e.Name], e.Name == "AWS_REGION":
		default:
			t.Errorf("%s: env %s is not a setting of %s (its --help names no such variable)", d.Name, e.Name, b.name)
		}
	}

	// Probes at the metrics port the binary listens on.
	prefix := strings.ToUpper(b.name) + "_"
	var port int32
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			port = p.ContainerPort
		}
	}
	if want := "0.0.0.0:" + strconv.Itoa(int(port)); port == 0 || env[prefix+"METRICS_ADDR"] != want {
		t.Errorf("%s: %sMETRICS_ADDR=%q, want %q (the container's metrics port)", d.Name, prefix, env[prefix+"METRICS_ADDR"], want)
	}
	if env[prefix+"PPROF"] != "" {
		t.Errorf("%s: %sPPROF serves the profiles on the metrics port", d.Name, prefix)
	}
	if addr := env[prefix+"PPROF_ADDR"]; addr != "" && strings.HasSuffix(addr, ":"+strconv.Itoa(int(port))) {
		t.Errorf("%s: %sPPROF_ADDR=%s is the metrics port", d.Name, prefix, addr)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no %s httpGet probe", d.Name, p.name)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path || (g.Port.StrVal != "metrics" && g.Port.IntVal != port) {
			t.Errorf("%s: %s probe %s on port %s, want %s on the metrics port %d", d.Name, p.name, g.Path, g.Port.String(), p.path, port)
		}
	}

	// ingest's state directory is a writable volume.
	if dir := env["INGEST_STATE_DIR"]; dir != "" {
		ok := false
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == dir && !vm.ReadOnly {
				if vol, found := vols[vm.Name]; found && (vol.EmptyDir != nil || vol.PersistentVolumeClaim != nil) {
					ok = true
				}
			}
		}
		if !ok {
			t.Errorf("%s: INGEST_STATE_DIR=%s is not a writable emptyDir or PVC mount", d.Name, dir)
		}
	}

	checkConfig(t, d.Name, b, env)
}

// checkSecretFile checks that e (a <VAR>_FILE) names a file of a mounted
// Secret volume.
func checkSecretFile(t *testing.T, deploy string, e corev1.EnvVar, mounts map[string]corev1.VolumeMount, vols map[string]corev1.Volume) {
	dir, file := filepath.Split(e.Value)
	for name, vm := range mounts {
		if filepath.Clean(vm.MountPath) != filepath.Clean(dir) {
			continue
		}
		vol := vols[name]
		if vol.Secret == nil || vol.Secret.SecretName == "" {
			t.Errorf("%s: %s=%s is on volume %s, which is not a Secret", deploy, e.Name, e.Value, name)
			return
		}
		if !vm.ReadOnly {
			t.Errorf("%s: the secret volume %s is mounted writable", deploy, name)
		}
		if len(vol.Secret.Items) > 0 && !slices.ContainsFunc(vol.Secret.Items, func(k corev1.KeyToPath) bool { return k.Path == file }) {
			t.Errorf("%s: %s=%s: Secret %s has no item with path %s", deploy, e.Name, e.Value, vol.Secret.SecretName, file)
		}
		return
	}
	t.Errorf("%s: %s=%s is not under any volume mount", deploy, e.Name, e.Value)
}

// checkConfig runs the binary's --check-config with the rendered env, each
// <VAR>_FILE pointing at a stand-in file and each directory at a temp dir.
func checkConfig(t *testing.T, deploy string, b *binary, env map[string]string) {
	tmp := t.TempDir()
	cmd := exec.Command(b.exe, "--check-config")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp}
	for name, val := range env {
		switch {
		case strings.HasSuffix(name, "_FILE") && b.secrets[strings.TrimSuffix(name, "_FILE")]:
			val = filepath.Join(tmp, name)
			if err := os.WriteFile(val, []byte("stand-in-secret"), 0o600); err != nil {
				t.Fatal(err)
			}
		case (strings.Contains(name, "_TLS_") || strings.HasSuffix(name, "_CA_FILE")) && strings.HasSuffix(name, "_FILE"):
			val = "" // PEM files of a Secret the test does not have
		case name == "INGEST_STATE_DIR":
			val = filepath.Join(tmp, "state")
		}
		if val != "" {
			cmd.Env = append(cmd.Env, name+"="+val)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: %s --check-config with the rendered env: %v\n%s", deploy, b.name, err, out)
	}
}

func checkOthers(t *testing.T, m manifests, v values) {
	podLabels := map[string]labels.Set{}
	for _, d := range m.deployments {
		podLabels[d.Name] = d.Spec.Template.Labels
	}
	matches := func(sel map[string]string) []string {
		var names []string
		for name, l := range podLabels {
			if labels.SelectorFromSet(sel).Matches(l) {
				names = append(names, name)
			}
		}
		return names
	}
	for _, s := range m.services {
		if len(matches(s.Spec.Selector)) == 0 {
			t.Errorf("service %s selects no pod", s.Name)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "metrics" || s.Spec.Ports[0].TargetPort.StrVal != "metrics" {
			t.Errorf("service %s: ports %+v, want one named metrics to the pods' metrics port", s.Name, s.Spec.Ports)
		}
	}
	// One service account per binary, with that binary's annotations
	// (its own IAM role), and each binary's pods run as their own.
	accounts := map[string]*corev1.ServiceAccount{}
	for _, sa := range m.serviceAccounts {
		accounts[sa.Labels["app.kubernetes.io/component"]] = sa
	}
	if len(m.serviceAccounts) != 2 || accounts["capture"] == nil || accounts["ingest"] == nil || accounts["capture"].Name == accounts["ingest"].Name {
		t.Fatalf("service accounts %v, want one for capture and one for ingest", accounts)
	}
	for component, want := range map[string]map[string]string{"capture": v.Capture.ServiceAccount.Annotations, "ingest": v.Ingest.ServiceAccount.Annotations} {
		for k, val := range want {
			if got := accounts[component].Annotations[k]; got != val {
				t.Errorf("%s service account annotation %s = %q, want %q (IRSA)", component, k, got, val)
			}
		}
	}
	for _, d := range m.deployments {
		want := accounts[d.Spec.Template.Labels["app.kubernetes.io/component"]].Name
		if d.Spec.Template.Spec.ServiceAccountName != want {
			t.Errorf("%s runs as service account %q, want %q", d.Name, d.Spec.Template.Spec.ServiceAccountName, want)
		}
	}
	// A network policy per binary admits only the metrics port, and only
	// from the peers it names.
	covered := map[string]bool{}
	for _, np := range m.netpols {
		names := matches(np.Spec.PodSelector.MatchLabels)
		if len(names) == 0 {
			t.Errorf("network policy %s selects no pod", np.Name)
		}
		for _, name := range names {
			covered[name] = true
		}
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				t.Errorf("network policy %s admits every source", np.Name)
			}
			for _, name := range names {
				for _, d := range m.deployments {
					if d.Name != name {
						continue
					}
					metrics := d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
					if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.IntVal != metrics {
						t.Errorf("network policy %s admits ports %+v to %s, want its metrics port %d only", np.Name, rule.Ports, name, metrics)
					}
				}
			}
		}
	}
	for name := range podLabels {
		if !covered[name] {
			t.Errorf("no network policy selects the pods of %s", name)
		}
	}
	wantPDB := v.Ingest.PodDisruptionBudget == nil || v.Ingest.PodDisruptionBudget.Enabled
	if got := len(m.pdbs); (got == 1) != wantPDB || got > 1 {
		t.Errorf("%d pod disruption budgets, want %v", got, wantPDB)
	}
	for _, p := range m.pdbs {
		if got := matches(p.Spec.Selector.MatchLabels); len(got) != 1 || !strings.HasSuffix(got[0], "-ingest") {
			t.Errorf("pod disruption budget %s selects %v, want the ingest deployment", p.Name, got)
		}
	}
	if got := len(m.serviceMonitors); (got == 1) != v.ServiceMonitor.Enabled || got > 1 {
		t.Errorf("%d service monitors, want enabled=%v", got, v.ServiceMonitor.Enabled)
	}
	for _, sm := range m.serviceMonitors {
		n := 0
		for _, s := range m.services {
			if labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
				n++
			}
		}
		if n != len(m.services) || n == 0 {
			t.Errorf("service monitor %s selects %d of the %d metrics services", sm.Name, n, len(m.services))
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
			t.Errorf("service monitor %s endpoints %+v, want port metrics", sm.Name, sm.Spec.Endpoints)
		}
	}
}

// TestChartRefusesUnsafeValues: values that would put a secret in a plain
// env value, move the metrics port away from the probes, share a state
// directory between processes, or duplicate a source fail to render.
func TestChartRefusesUnsafeValues(t *testing.T) {
	helm := testenv.Tool(t, "helm")
	base := `
kafka: {brokers: "kafka:9092"}
ingest: {catalog: {uri: "http://rest:8181"}, topics: a.b.c}
`
	for _, tc := range []struct{ name, values, want string }{
		{"secret in settings", `capture: {sources: [{name: a, topicPrefix: a, mysql: {addr: "m:3306"}, settings: {CAPTURE_MYSQL_PASSWORD: x}}]}`, "is a secret"},
		{"secret file in settings", `ingest: {settings: {INGEST_CATALOG_TOKEN_FILE: /t}, catalog: {uri: "http://rest:8181"}}`, "is a secret"},
		{"metrics address in settings", `capture: {settings: {CAPTURE_METRICS_ADDR: "127.0.0.1:1"}, sources: [{name: a, topicPrefix: a, mysql: {addr: "m:3306"}}]}`, "metricsPort"},
		{"not a setting", `ingest: {settings: {FLUSH_ROWS: 1}, catalog: {uri: "http://rest:8181"}}`, "is not a setting of ingest"},
		{"pvc with replicas", `ingest: {replicas: 2, stateDir: {type: pvc}, catalog: {uri: "http://rest:8181"}}`, "needs ingest.replicas 1"},
		{"two sources one name", `capture: {sources: [{name: a, topicPrefix: a, mysql: {addr: "m:1"}}, {name: a, topicPrefix: b, mysql: {addr: "m:2"}}]}`, "appears twice"},
		{"dv without state", `ingest: {deleteMode: dv, stateDir: {type: none}, catalog: {uri: "http://rest:8181"}}`, "key index"},
		{"default mode without state", `ingest: {stateDir: {type: none}, catalog: {uri: "http://rest:8181"}}`, "auto (the default)"},
		{"one account for both", `serviceAccount: {annotations: {a: b}}`, "one per binary"},
		{"pprof in settings", `ingest: {settings: {INGEST_PPROF: true}, catalog: {uri: "http://rest:8181"}}`, "ingest.pprof"},
		{"pprof on the metrics port", `ingest: {pprof: {enabled: true, port: 9465}, catalog: {uri: "http://rest:8181"}}`, "must differ"},
		{"registry password and token", `schemaRegistryAuth: {passwordSecret: {name: a}, tokenSecret: {name: b}}`, "only one of schemaRegistryAuth"},
		{"token and credential", `ingest: {catalog: {uri: "http://rest:8181", tokenSecret: {name: a}, credentialSecret: {name: b}}}`, "only one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			basef, f := filepath.Join(dir, "base.yaml"), filepath.Join(dir, "case.yaml")
			if err := os.WriteFile(basef, []byte(base), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(tc.values), 0o600); err != nil {
				t.Fatal(err)
			}
			var errOut bytes.Buffer
			cmd := exec.Command(helm, "template", "rel", chart, "-f", basef, "-f", f)
			cmd.Stderr = &errOut
			if err := cmd.Run(); err == nil {
				t.Fatalf("helm template rendered values %s", tc.values)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("helm template failed with %q, want a message containing %q", errOut.String(), tc.want)
			}
		})
	}
}
