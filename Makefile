# 两条命令完成一切：make book（构建网站）与 make test（证明整门课可运行）
# 第一次运行时自动建立 .venv 并安装 requirements.txt 中锁定的版本

PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
COMPAT     := .venv-compat
JOBS       ?= 2
MATHJAX    := node_modules/.mathjax-installed

# 笔记本与测试默认用 8 个模拟 CPU 设备；内核从 .venv 的 kernelspec 启动
export COURSE_PROFILE ?= cpu
export XLA_FLAGS ?= --xla_force_host_platform_device_count=8
export JUPYTER_PATH := $(CURDIR)/$(VENV)/share/jupyter
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help venv book test test-fast test-site mathjax bench sync check-sync coverage lint test-compat clean grade assign exercises

help:
	@echo "make book         建环境（首次）并从头构建网站，执行全部笔记本"
	@echo "make test         建环境（首次）并运行全部测试：单元测试、nbval 跑每个笔记本、一致性检查、一次完整构建（复用 nbval 的执行结果）"
	@echo "make test-fast    只跑快的测试（跳过标记为 slow 的：不执行笔记本、不构建网站）"
	@echo "make test-site    构建网站，在 Chromium 里打开每一页检查（数学式、图片、链接、控制台、外部请求），截图到 _build/screenshots/"
	@echo "make sync         重新生成与 .md 配对的 .ipynb（不含输出）"
	@echo "make exercises    由 solutions/ 重新生成 exercises/ 的练习笔记本"
	@echo "make answer-key   运行解答笔记本，写出 build/answer_key.json"
	@echo "make grade        评分：make grade SUBMISSIONS=<目录或通配符> OUT=<目录> ROSTER=<花名册> SECRET=<密钥> CHAPTER=5（个人版要给 ROSTER 与 SECRET；见 README「教师：个人版、评分与 Gradescope」与教师指南）"
	@echo "make assign       个人版练习：make assign ROSTER=<花名册.csv> SECRET=<密钥文件> OUT=<目录>（见 README）"
	@echo "make bench        计时集合通信（CPU 档位默认 1 KiB–16 MiB；COURSE_PROFILE=tpu|gpu 在真实硬件上测）"
	@echo "make coverage     单元测试 + shardlab 行覆盖率"
	@echo "make test-compat  在另一个环境 .venv-compat 里用 jax 0.7.2（Colab 的版本）跑运行时测试，并用 nbval 跑全部笔记本"
	@echo "make lint         ruff 检查 + 导入契约（lint-imports，规则在 pyproject.toml）"

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	@touch $@

# 网站自带的 MathJax：按 package-lock.json 从 npm 安装（node_modules 不提交；构建时由 tools/site_assets.py 复制进网站）
mathjax: $(MATHJAX)

$(MATHJAX): package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	@touch $@

book: $(STAMP) $(MATHJAX)
	rm -rf _build
	$(BIN)/jupyter-book build -W -n --keep-going .
	@echo "网站已构建：$(CURDIR)/_build/html/index.html"

test: $(STAMP) $(MATHJAX)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder

# 浏览器测试用刚构建的 _build/html（make test 里它自己在临时目录构建一份）
test-site: book
	SHARDLAB_SITE=$(CURDIR)/_build/html $(BIN)/python -m pytest -v tests/test_site.py

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -m "not slow"

sync: $(STAMP)
	$(BIN)/python tools/nbsync.py

check-sync: $(STAMP)
	$(BIN)/python tools/nbsync.py --check

exercises: $(STAMP)
	$(BIN)/python tools/make_exercises.py

answer-key: $(STAMP)
	$(BIN)/python -m shardlab.grade.key --course . --out build/answer_key.json

# 教师用评分：make grade SUBMISSIONS=<目录或通配符> OUT=<目录> [JOBS=2] [CHAPTER=5] [FORCE=1] [ROSTER=… SECRET=…] [WEIGHTS=…] [CANVAS_COLUMN=…]
# 路径都可以在仓库外面（教师指南用 ~/course-admin/…）
grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" -a -n "$(OUT)" || { echo "用法：make grade SUBMISSIONS=<目录或通配符> OUT=<目录>"; exit 2; }
	$(BIN)/shardlab-grade "$(SUBMISSIONS)" --out "$(OUT)" --course . -j $(JOBS) $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(FORCE),--force) \
		$(if $(ROSTER),--roster "$(ROSTER)") $(if $(SECRET),--secret-file "$(SECRET)") $(if $(WEIGHTS),--weights "$(WEIGHTS)") \
		$(if $(CANVAS_COLUMN),--canvas-column "$(CANVAS_COLUMN)") $(if $(ZERO_MISSING),--zero-missing)

# 个人版练习：make assign ROSTER=<花名册.csv> SECRET=<密钥文件> OUT=<目录> [SOLUTIONS=1] [FORCE=1]
assign: $(STAMP)
	@test -n "$(ROSTER)" -a -n "$(SECRET)" -a -n "$(OUT)" || { echo "用法：make assign ROSTER=<花名册.csv> SECRET=<密钥文件> OUT=<目录> [SOLUTIONS=1] [FORCE=1]"; exit 2; }
	$(BIN)/shardlab-assign "$(ROSTER)" --secret-file "$(SECRET)" --out "$(OUT)" $(if $(SOLUTIONS),--solutions) $(if $(FORCE),--force)

# 集合通信基准：BENCH_ARGS 传给 python -m shardlab.bench（例如 BENCH_ARGS="--sizes 1k:1M --processes 2"）
bench: $(STAMP)
	$(BIN)/python -m shardlab.bench $(BENCH_ARGS)

coverage: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile tests \
		--cov=shardlab --cov-report=term-missing --cov-fail-under=90

lint: $(STAMP)
	$(BIN)/ruff check lib tests tools
	$(BIN)/ruff format --check lib tests tools
	$(BIN)/lint-imports --no-logo

$(COMPAT)/.installed: requirements-compat.txt requirements.txt pyproject.toml
	@test -x $(COMPAT)/bin/python || $(PYTHON) -m venv $(COMPAT)
	@mkdir -p build
	grep -v -E '^(jax|jaxlib)==' requirements.txt > build/constraints-compat.txt
	$(COMPAT)/bin/python -m pip install -q --disable-pip-version-check -c build/constraints-compat.txt -r requirements-compat.txt
	$(COMPAT)/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
	$(COMPAT)/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	@touch $@

# 兼容环境里的 jax 必须正是 requirements-compat.txt 锁定的版本（Colab 的 0.7.2）：先检查，测试里再检查一次（tests/test_runtime.py）
COMPAT_JAX := $(shell sed -n 's/^jax==//p' requirements-compat.txt)

test-compat: $(COMPAT)/.installed
	$(COMPAT)/bin/python -c "import jax, jaxlib; v = (jax.__version__, jaxlib.__version__); print('兼容环境：jax %s，jaxlib %s' % v); \
		assert v == ('$(COMPAT_JAX)',) * 2, '.venv-compat 里的 jax 不是 $(COMPAT_JAX)：删掉 .venv-compat 重来'"
	JUPYTER_PATH=$(CURDIR)/$(COMPAT)/share/jupyter SHARDLAB_EXPECT_JAX=$(COMPAT_JAX) $(COMPAT)/bin/python -m pytest \
		-n $(JOBS) --dist loadfile --no-loadscope-reorder tests/test_runtime.py book solutions exercises

clean:
	rm -rf _build build .pytest_cache .coverage
