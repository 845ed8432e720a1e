package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func serveResults(cmd *cobra.Command, dir, listen string) error {
	return errors.New("not yet")
}
