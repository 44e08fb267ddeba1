// Package backend is the seam between the experiment flow and where an
// application runs: Backend is what predict, validate, rank, latency and
// pools need of a running application, whatever started it. What depends
// on where the services run (the cores' idle time, a service's CPU time,
// CPU quotas, how a pause reaches a service's processes, files shared with
// the controllers) the experiment asks of the backend through Meter,
// Processes and SharedFiles, never of the machine.
//
// A service's controller is reached through Control, which
// *controller.Client implements over the authenticated control port;
// internal/backend/backendtest fakes it for unit tests of bookkeeping and
// error paths only.
//
// Two implementations: internal/backend/local starts every service as a
// process on this machine under its controller; internal/backend/kube
// runs the controllers inside the pods of an application already deployed
// on a Kubernetes cluster.
package backend
