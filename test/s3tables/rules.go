package s3tables

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// validName is S3 Tables' rule for namespace and table names: 1 to 255
// characters of lowercase letters, digits and underscores, beginning and
// ending with a letter or digit.
var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9_]{0,253}[a-z0-9])?$`)

// CheckName returns why S3 Tables refuses name as a namespace (namespace
// true) or table name, or "".
func CheckName(name string, namespace bool) string {
	what := "table"
	if namespace {
		what = "namespace"
		if strings.Contains(name, "\x1f") || strings.Contains(name, ".") {
			return fmt.Sprintf("namespace %q: S3 Tables namespaces have one level; they cannot be nested", name)
		}
	}
	if !validName.MatchString(name) {
		return fmt.Sprintf("%s name %q: names are 1 to 255 characters of a-z, 0-9 and _, beginning and ending with a letter or digit", what, name)
	}
	if namespace && strings.HasPrefix(name, "aws") {
		return fmt.Sprintf("namespace %q: names beginning with aws are reserved", name)
	}
	return ""
}

// refuse returns why S3 Tables refuses the request to rest (the path
// after /v1/<prefix>), or "" to forward it.
func refuse(r *http.Request, rest []string, body []byte) string {
	for _, s := range rest {
		if s == "views" {
			return "views are not supported"
		}
	}
	if len(rest) == 0 || rest[0] != "namespaces" {
		return ""
	}
	if len(rest) == 1 {
		if r.URL.Query().Get("parent") != "" {
			return "S3 Tables namespaces have one level: listing under a parent is not supported"
		}
		if r.Method == http.MethodPost {
			var req struct {
				Namespace []string `json:"namespace"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return "decoding the create-namespace request: " + err.Error()
			}
			if len(req.Namespace) != 1 {
				return fmt.Sprintf("namespace %v: S3 Tables namespaces have exactly one level", req.Namespace)
			}
			return CheckName(req.Namespace[0], true)
		}
		return ""
	}
	if msg := CheckName(rest[1], true); msg != "" {
		return msg
	}
	if len(rest) < 3 || rest[2] != "tables" {
		return ""
	}
	if len(rest) == 3 && r.Method == http.MethodPost {
		var req struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return "decoding the create-table request: " + err.Error()
		}
		return CheckName(req.Name, false)
	}
	if len(rest) >= 4 {
		if msg := CheckName(rest[3], false); msg != "" {
			return msg
		}
		if len(rest) == 4 && r.Method == http.MethodDelete && r.URL.Query().Get("purgeRequested") != "true" {
			return "S3 Tables drops a table only with purgeRequested=true"
		}
	}
	return ""
}
