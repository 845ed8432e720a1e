package api

import (
	"encoding/json"
	"net/http"
)

// WriteJSON answers an API request with v as indented JSON and status
// code: the agents' way, which Client reads.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteError answers an API request with an APIError saying msg.
func WriteError(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, APIError{Error: msg})
}
