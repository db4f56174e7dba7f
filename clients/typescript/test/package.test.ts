// The runtime packages whose types and classes a page shares with this one (@bufbuild/protobuf's
// descriptors, @connectrpc/connect's Interceptor and Client) are taken as ranges, never exact
// versions: a page that installs @connectrpc/connect-web (README, "In a browser") gets the newest
// @bufbuild/protobuf as its peer, and an exact pin here made npm nest a second, older copy under
// this package, whose GameService then failed strict tsc in createClient (not a DescService) and
// doubled the bundle's runtime. The lockfile still pins what this package builds and tests with.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

/** package.json, from dist/test/ or test/. */
const manifest = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
) as { dependencies: Record<string, string> };

/** Shared with the page's own copies: one of each in its node_modules. */
const SHARED = ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-node"];

test("the runtime packages a page shares are taken as caret ranges, not exact versions", () => {
  for (const name of SHARED) {
    assert.match(manifest.dependencies[name] ?? "", /^\^\d+\.\d+\.\d+$/, name);
  }
});
