package ui

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Results serves a results folder (sim sweep's results.csv, bench run's
// and make demo's results.csv and MODE/jobs.csv) as interactive plots: the
// page reads the CSV files, the same data the PNG and SVG figures are drawn
// from, and draws them in the browser.
type Results struct {
	root fs.FS
	dir  string
}

// maxCSV bounds a CSV file served (a sweep of sweep.MaxPoints rows is far
// smaller).
const maxCSV = 64 << 20

// NewResults checks that dir is a directory holding at least one CSV file
// the page can plot.
func NewResults(dir string) (*Results, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (want the output folder of sim sweep, bench run or make demo)", dir)
	}
	r := &Results{root: os.DirFS(dir), dir: dir}
	files, err := r.files()
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no results.csv or MODE/jobs.csv (want the output folder of sim sweep, bench run or make demo)", dir)
	}
	return r, nil
}

// ResultFile is a CSV file the page may plot: its path under the folder
// and its header.
type ResultFile struct {
	Path   string   `json:"path"`
	Header []string `json:"header"`
}

// files lists the folder's CSV files, at its top and one level down
// (MODE/jobs.csv), in name order.
func (r *Results) files() ([]ResultFile, error) {
	var out []ResultFile
	err := fs.WalkDir(r.root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.Count(p, "/") >= 1 {
				return fs.SkipDir // MODE/state/… holds the agents' files
			}
			return nil
		}
		if !strings.HasSuffix(p, ".csv") {
			return nil
		}
		f, err := r.root.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h, err := csv.NewReader(f).Read()
		if err != nil {
			return nil // not a CSV file of ours
		}
		out = append(out, ResultFile{Path: p, Header: h})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.dir, err)
	}
	slices.SortFunc(out, func(a, b ResultFile) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Handler serves the page, the file list (/api/files) and the CSV files
// (/data/PATH, only those listed).
func (r *Results) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		secureHeaders(w)
		http.ServeFileFS(w, req, static, "results.html")
	})
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		secureHeaders(w)
		http.FileServerFS(static).ServeHTTP(w, req)
	})))
	mux.HandleFunc("GET /api/files", func(w http.ResponseWriter, _ *http.Request) {
		files, err := r.files()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(map[string]any{"dir": r.dir, "files": files})
	})
	mux.HandleFunc("GET /data/{path...}", func(w http.ResponseWriter, req *http.Request) {
		p := req.PathValue("path")
		files, err := r.files()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if !filepath.IsLocal(p) || !slices.ContainsFunc(files, func(f ResultFile) bool { return f.Path == p }) {
			http.Error(w, "no such results file: "+p, http.StatusNotFound)
			return
		}
		b, err := fs.ReadFile(r.root, p)
		if errors.Is(err, fs.ErrNotExist) {
			http.Error(w, "no such results file: "+p, http.StatusNotFound)
			return
		}
		if err != nil || len(b) > maxCSV {
			http.Error(w, fmt.Sprintf("%s: unreadable or larger than %d bytes", p, maxCSV), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	})
	return mux
}
