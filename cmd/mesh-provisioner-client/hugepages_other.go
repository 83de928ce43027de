//go:build !linux

package main

import "errors"

// collapseHeap: huge pages are asked of Linux alone.
func collapseHeap() (collapsed, error) {
	return collapsed{}, errors.New("huge pages for the heap are asked of Linux alone")
}
