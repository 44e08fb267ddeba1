// Package backend is the seam between the experiment flow and where an
// application runs: Backend is what predict, validate, rank, latency and
// pools need of a running application, whatever started it.
//
// Two implementations: internal/backend/local starts every service as a
// process on this machine under its controller; internal/backend/kube
// runs the controllers inside the pods of an application already deployed
// on a Kubernetes cluster.
package backend
