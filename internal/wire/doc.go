// Package wire is slowpoke's TCP control protocol, spoken between the
// orchestrator and controllers and between neighbouring controllers.
//
// A connection starts with a hello frame from the server carrying a fresh
// random nonce. Every frame after that is
//
//	magic "SP" | version (1 byte) | type (1 byte) | length (uint32, big endian) | payload | MAC (32 bytes)
//
// where the payload is JSON of at most MaxPayload bytes and the MAC is
// HMAC-SHA256 under the per-experiment secret over the direction, the
// connection nonce, a per-direction sequence number, the header and the
// payload. The nonce and sequence numbers make every frame valid on one
// connection, in one direction, at one position: a recorded frame cannot be
// replayed, reordered or reflected. The hello frame is itself MACed (sequence
// 0, server direction), so both sides prove they hold the secret.
//
// A configure message names its pause method as a tagged union (Pause):
// one key per method, holding only that method's fields. Configure.Check
// is the one place that says which messages are well formed.
package wire
