package registrysec

import (
	"strings"
	"testing"
)

func TestRegistrySecurityValidate(t *testing.T) {
	pwd := "hunter2-secret"
	for _, c := range []struct {
		name, url string
		r         RegistrySecurity
		errHas    string
	}{
		{"none", "http://registry:8081", RegistrySecurity{}, ""},
		{"scheme-less URL", "127.0.0.1:8081", RegistrySecurity{Username: "u", Password: pwd}, ""},
		{"credentials in the URL", "https://u:" + pwd + "@registry:8081", RegistrySecurity{}, "holds credentials"},
		{"in clear to a remote registry", "http://registry:8081", RegistrySecurity{Username: "u", Password: pwd}, "in clear"},
		{"token in clear", "http://registry:8081", RegistrySecurity{Token: pwd}, "in clear"},
		{"password without user", "https://registry", RegistrySecurity{Password: pwd}, "without schema-registry-username"},
		{"user without password", "https://registry", RegistrySecurity{Username: "u"}, "needs a password"},
		{"both", "https://registry", RegistrySecurity{Username: "u", Password: pwd, Token: "t"}, "not both"},
		{"CA file over http", "http://127.0.0.1:8081", RegistrySecurity{CAFile: "/nonexistent"}, "not https"},
		{"missing CA file", "https://registry", RegistrySecurity{CAFile: "/nonexistent/ca.pem"}, "schema-registry-ca-file"},
		{"set without a URL", "", RegistrySecurity{Token: "t"}, "schema-registry-url is empty"},
	} {
		err := c.r.Validate(c.url)
		if (c.errHas == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.errHas)) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.errHas)
		}
		if err != nil && strings.Contains(err.Error(), pwd) {
			t.Errorf("%s: the error shows the secret: %v", c.name, err)
		}
	}
}
