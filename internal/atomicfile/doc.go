// Package atomicfile writes files that readers see whole or not at all:
// the data goes to a temporary file in the same directory, which is
// renamed over the destination only once it is complete. A writer killed
// part way leaves the destination as it was, and a temporary file that
// Leftover recognizes, so that whoever cleans up after it can remove it.
package atomicfile
