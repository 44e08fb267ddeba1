// Package image builds the container image that slowpoke's Kubernetes
// runs need: the static slowpoke binary at /slowpoke (copied into each
// pod by an init container), a world-writable /tmp, and any further files
// asked for, as one reproducible layer, without a Docker daemon
// (github.com/google/go-containerregistry). The image is written as an
// archive that `ctr images import`, `kind load image-archive` and `docker
// load` take, or pushed to a registry with the user's usual credentials.
package image
