//go:build !race

package scale

// raceEnabled says the binary was built with -race: its heap figures are
// not the manager's.
const raceEnabled = false
