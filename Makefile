# Croupier — `make run` serves on 127.0.0.1:50051 with SQLite; `make test` runs every test.
# Both set everything up on a fresh machine: .venv, the pinned dependencies, the generated stubs.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PROTOS := $(shell find proto -name '*.proto')
STAMP := $(VENV)/.croupier-installed
GEN_STAMP := gen/.stamp
# mypy finds the package through this tree of links (the repository keeps the design card's layout,
# installed as croupier.*; mypy cannot follow setuptools' folder mapping).
TYPE_ROOT := build/typecheck
LAYERS := engine contract log app service replays

.PHONY: run test bench lint check links typecheck breaking release-contract gen install clean browser \
  clients web web-if-npm

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The stubs come from proto/ with the pinned grpcio-tools and protoc-gen-connectrpc (generated,
# never edited, not committed); gen/googleapis/ gets the google/rpc protos for other languages.
$(GEN_STAMP): $(PROTOS) service/codegen.py | $(PY)
	$(PY) -m pip install --quiet grpcio-tools==1.85.1 mypy-protobuf==5.1.0 \
	  protoc-gen-connectrpc==0.13.0 googleapis-common-protos==1.76.0
	$(PY) service/codegen.py gen
	touch $@

$(STAMP): pyproject.toml $(GEN_STAMP)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(STAMP)

gen: $(GEN_STAMP)

# A local try: the web client at http://127.0.0.1:8080 with its lobby (README, "In a browser").
run: install web-if-npm
	$(VENV)/bin/croupier serve --lobby

# The reference web client (clients/web/dist, not committed), and first the TypeScript client it
# bundles (clients/typescript): npm ci with the committed lockfiles, then buf + tsc, then esbuild.
# npm's packages only: a front end builds without the Python set-up.
WEB := clients/web
TS_CLIENT := clients/typescript
WEB_BUILT := $(WEB)/dist/index.html
WEB_SOURCES := $(wildcard $(WEB)/src/* $(WEB)/build.mjs $(WEB)/package*.json \
  $(TS_CLIENT)/src/*.ts $(TS_CLIENT)/scripts/* $(TS_CLIENT)/package*.json $(TS_CLIENT)/buf.gen.yaml)
# The TypeScript client is built once, with its tests, for both: `make test` on a fresh clone built
# it twice, for its own tests and again for the web client (some 20 s), and every `make test`
# built it again.
TS_BUILT := $(TS_CLIENT)/dist/.built
TS_SOURCES := $(wildcard $(TS_CLIENT)/src/*.ts $(TS_CLIENT)/test/*.ts $(TS_CLIENT)/scripts/* \
  $(TS_CLIENT)/package*.json $(TS_CLIENT)/buf.gen.yaml $(TS_CLIENT)/tsconfig.json)

$(TS_BUILT): $(TS_SOURCES) $(PROTOS)
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund --loglevel=error && npm run build
	touch $@

$(WEB_BUILT): $(WEB_SOURCES) $(PROTOS) $(TS_BUILT)
	cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error && npm run build

web: $(WEB_BUILT)

# `make run` and `make test` build the web client when npm is there; without it, / says how.
web-if-npm:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory web; \
	else echo "npm not found: the web client is not built (its tests skip; / says how to build it)"; fi

# The HTML replay timeline and the web client are tested in headless Chromium: Debian's package, installed when missing
# (as root with apt); elsewhere those tests skip, except under CI=true.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null; }; \
	  else echo "chromium not found: the browser tests will skip (apt-get install chromium)"; fi; }

# The code's checks first (layers, types, style), then every test, spread over the machine's
# cores (pytest-xdist: a worker per core, at most TEST_WORKERS; TEST_WORKERS=0 runs them in one
# process). Each worker has its own PostgreSQL database, servers and ports.
TEST_WORKERS ?= 4
test: install browser check clients web-if-npm
	$(PY) -m pytest $(if $(filter 0,$(TEST_WORKERS)),,--numprocesses auto --maxprocesses $(TEST_WORKERS) --dist worksteal)

# The TypeScript client (generated from proto/ by buf at build time) and the Node.js example, with
# npm (Node.js >= 20; `npm ci` reads the npm registry): each one's tests run against a server they
# start (the venv's croupier, hence `install`; the build itself needs npm's packages only). Without them this skips with a message, except under CI=true.
NPM_CI := npm ci --no-audit --no-fund --loglevel=error
clients: install
	@if command -v npm >/dev/null 2>&1 && node -e 'process.exit(+process.versions.node.split(".")[0] < 20 ? 1 : 0)'; then \
	  $(MAKE) --no-print-directory $(TS_BUILT) && cd clients/typescript && npm test && \
	  cd ../../examples/node && $(NPM_CI) && npm test; \
	elif [ "$$CI" = true ]; then echo "CI=true: the TypeScript client needs Node.js >= 20 with npm" >&2; exit 1; \
	else echo "no Node.js >= 20 with npm: the TypeScript client and Node.js example tests are skipped"; fi

bench: install
	$(PY) -m pytest tests/bench --benchmark-only --benchmark-enable --benchmark-autosave

# The code's checks, also run by `make test`: layers (import-linter), types (mypy --strict), style
# (ruff), the Dockerfile (hadolint; tests/deploy/ validates the Kubernetes manifests).
check: typecheck
	PYTHONPATH=$(TYPE_ROOT) $(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/hadolint deploy/Dockerfile

links: install
	@rm -rf $(TYPE_ROOT) && mkdir -p $(TYPE_ROOT)/croupier
	@for layer in $(LAYERS) ; do ln -s ../../../$$layer $(TYPE_ROOT)/croupier/$$layer ; done
	@ln -s ../../../gen/croupier/v1 $(TYPE_ROOT)/croupier/v1

typecheck: links
	$(VENV)/bin/mypy $(foreach layer,$(LAYERS),-p croupier.$(layer))

lint: check
	cd proto && ../$(VENV)/bin/buf lint

# Compares the contract with the last release's (field numbers are forever): proto/released.binpb,
# rebuilt at each release with `make release-contract`.
breaking: install
	cd proto && ../$(VENV)/bin/buf breaking --against released.binpb

release-contract: install
	cd proto && ../$(VENV)/bin/buf build -o released.binpb

clean:
	rm -rf $(VENV) gen build *.egg-info $(WEB)/dist $(WEB)/node_modules
	rm -rf clients/typescript/node_modules clients/typescript/build clients/typescript/dist \
	  clients/typescript/src/gen examples/node/node_modules
