package s3tables

import (
	"net/http"

	"github.com/binlake/binlake/test/awssig"
)

// DeniedError is one refusal of a request's authentication (see
// awssig.DeniedError).
type DeniedError = awssig.DeniedError

// Verify checks r's SigV4 signature over body against the Handler's
// credentials, region and signing name, at the stand-in's clock; nil when
// AWS would accept it.
func (h *Handler) Verify(r *http.Request, body []byte) *DeniedError {
	return h.verify(r, body)
}

func (h *Handler) verify(r *http.Request, body []byte) *DeniedError {
	v := awssig.Verifier{Credentials: h.cfg.Credentials, Region: h.cfg.Region, Service: h.cfg.Flavor.SigningName(), Now: h.now}
	return v.Verify(r, body)
}

// awsError answers a refusal the way AWS's JSON protocols do.
func awsError(w http.ResponseWriter, e *DeniedError) { awssig.WriteError(w, e) }
