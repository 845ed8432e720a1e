package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/cli"
)

type uiFlags struct {
	cf      cli.ClientFlags
	urlOnly bool
	results string
	listen  string
}

func newUICmd() *cobra.Command {
	var f uiFlags
	cmd := &cobra.Command{
		Use:   "ui [--url] | ui --results DIR [--listen HOST:PORT]",
		Short: "Open the cluster's web page (the live matrix, the queue, the nodes), or serve a results folder as plots",
		Args:  cobra.NoArgs,
		// --results serves until interrupted: that is its normal end.
		Annotations: map[string]string{cli.StopAnnotation: cli.StopClean},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.results != "" {
				return serveResults(cmd, f.results, f.listen)
			}
			if cmd.Flags().Changed("listen") {
				return cli.Usage(fmt.Errorf("--listen is for --results only (the cluster's page is served by its agents, on their API address)"))
			}
			return openUI(cmd, &f)
		},
	}
	cmd.Flags().BoolVar(&f.urlOnly, "url", false, "print the login link instead of opening a browser")
	cmd.Flags().StringVar(&f.results, "results", "", "serve this results folder (sim sweep, bench run, make demo) as plots instead")
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:0", "with --results: the address to serve on (default: a free loopback port)")
	f.cf.Add(cmd)
	return cmd
}

func openUI(cmd *cobra.Command, f *uiFlags) error {
	c, err := f.cf.Client()
	if err != nil {
		return err
	}
	l, err := c.UILogin(cmd.Context())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.urlOnly {
		fmt.Fprintln(out, l.URL)
		return nil
	}
	if why := openBrowser(cmd.Context(), l.URL); why != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "no browser opened (%s): open this link within %s:\n", why, time.Until(l.Expires).Round(time.Second))
		fmt.Fprintln(out, l.URL)
		return nil
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "opened the cluster's page in your browser")
	return nil
}

// openBrowser opens url with xdg-open where a display is; it says why not
// ("" when it did).
func openBrowser(ctx context.Context, url string) string {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return "no DISPLAY or WAYLAND_DISPLAY"
	}
	bin, err := exec.LookPath("xdg-open")
	if err != nil {
		return "no xdg-open"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, bin, url).Run(); err != nil {
		return "xdg-open: " + err.Error()
	}
	return ""
}
