package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/ui"
)

// serveResults serves dir as plots on listen until the command's context
// ends (SIGINT, SIGTERM); its first line of output is the page's address.
func serveResults(cmd *cobra.Command, dir, listen string) error {
	res, err := ui.NewResults(dir)
	if err != nil {
		return cli.Usage(fmt.Errorf("--results: %w", err))
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return cli.Usage(fmt.Errorf("--listen %s: %w", listen, err))
	}
	srv := &http.Server{Handler: res.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.OutOrStdout(), "http://%s/\n", ln.Addr())
	fmt.Fprintf(cmd.ErrOrStderr(), "serving %s as plots until interrupted (Ctrl-C)\n", dir)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", dir, err)
	case <-cmd.Context().Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
