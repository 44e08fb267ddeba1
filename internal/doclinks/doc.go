// Package doclinks checks the relative links of Markdown pages: that
// every linked file exists and every #anchor names a heading (or an
// explicit id) of its page, as GitHub renders them. Its test runs it on
// README.md and docs/.
package doclinks
