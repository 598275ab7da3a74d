// Package e2e runs the real binaries as processes against the local stack
// and checks the pipeline's guarantees end to end (build tag integration).
package e2e
