// Package docs has no code of its own: its tests keep the README and docs/
// true to the repository. docs/README.md indexes every page, every relative
// link resolves, the README's make table matches the Makefile's documented
// targets, its layout table matches the directories, and its sample output
// is the plugin's golden rendering. They read files only, so they run in
// `make test-unit`.
package docs
