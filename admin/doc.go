// Package admin is the operator's layer, above the recipes: what is at a
// path (Inspect: any kind of recipe, shepherd's, Curator's or Kazoo's, its
// holders and waiters with their sessions and tokens), an operator's
// revocation of one grant (Revoke, AskRevoke), and the removal of what an
// idle recipe left (RemoveIdle). The CLI's status, ls, revoke and rm are
// built on it. No recipe imports it; it reads every kind's layout from the
// declarations the recipes refuse one another's paths by (docs/layouts.md).
package admin
