// Package docs holds cosched's user documentation (the pages linked from
// the README). It has no Go code: its tests keep the documentation honest.
//
//   - TestReadmeCommands runs the README's shell blocks, in order, in a
//     temporary directory with a freshly built cosched first on PATH.
//     Every ```sh and ```go block carries an HTML comment on the line
//     before it saying how it is tested: `<!-- test: run -->` (run its
//     commands one by one in one sh -e, each within 30 s, or `timeout=D`;
//     `expect=REGEXP`, last, is what the block's output must match),
//     `<!-- test: file=PATH -->` (write the block to PATH, for the blocks
//     after it), or `<!-- test: skip (why) -->`. A block without one fails
//     the test, so a new command cannot slip in untested by accident; only
//     a block of make commands (the README's first: make demo, make test)
//     is exempt, as make test is what runs this test.
//   - TestLinks checks every relative link of README.md and docs/*.md: the
//     file exists, and an #anchor names a heading of it.
//   - TestArchitectureArrows checks ARCHITECTURE.md's package map against
//     go list: every package drawn, each arrow a direct import, none left out.
package docs
