package demo

import "golang.org/x/term"

func termIsTerminal(fd int) bool { return term.IsTerminal(fd) }

// termSize returns the terminal's width and height, or 120×40 when it
// cannot tell.
func termSize(fd int) (w, h int) {
	w, h, err := term.GetSize(fd)
	if err != nil || w <= 0 || h <= 0 {
		return 120, 40
	}
	return w, h
}
