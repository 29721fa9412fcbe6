# 两条命令完成一切：make book（构建网站）与 make test（证明整门课可运行）
# 第一次运行时自动建立 .venv 并安装 requirements.txt 中锁定的版本

PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
COMPAT     := .venv-compat
JOBS       ?= 2

# 笔记本与测试默认用 8 个模拟 CPU 设备；内核从 .venv 的 kernelspec 启动
export COURSE_PROFILE ?= cpu
export XLA_FLAGS ?= --xla_force_host_platform_device_count=8
export JUPYTER_PATH := $(CURDIR)/$(VENV)/share/jupyter
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help venv book test test-fast sync check-sync coverage lint test-compat clean

help:
	@echo "make book         建环境（首次）并从头构建网站，执行全部笔记本"
	@echo "make test         建环境（首次）并运行全部测试：单元测试、所有笔记本、一致性检查、一次完整构建"
	@echo "make sync         重新生成与 .md 配对的 .ipynb（不含输出）"
	@echo "make coverage     单元测试 + shardlab 行覆盖率"
	@echo "make test-compat  用 jax 0.7.2（Colab 的版本）跑运行时测试和一个演示"
	@echo "make lint         ruff 检查"

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	@touch $@

book: $(STAMP)
	rm -rf _build
	$(BIN)/jupyter-book build -W -n --keep-going .
	@echo "网站已构建：$(CURDIR)/_build/html/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -m "not slow"

sync: $(STAMP)
	$(BIN)/python tools/nbsync.py

check-sync: $(STAMP)
	$(BIN)/python tools/nbsync.py --check

coverage: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile tests -m "not slow" \
		--cov=shardlab --cov-report=term-missing --cov-fail-under=90

lint: $(STAMP)
	$(BIN)/ruff check lib tests tools
	$(BIN)/ruff format --check lib tests tools

$(COMPAT)/.installed: requirements-compat.txt requirements.txt pyproject.toml
	@test -x $(COMPAT)/bin/python || $(PYTHON) -m venv $(COMPAT)
	@mkdir -p build
	grep -v -E '^(jax|jaxlib)==' requirements.txt > build/constraints-compat.txt
	$(COMPAT)/bin/python -m pip install -q --disable-pip-version-check -c build/constraints-compat.txt -r requirements-compat.txt
	$(COMPAT)/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
	$(COMPAT)/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	@touch $@

test-compat: $(COMPAT)/.installed
	JUPYTER_PATH=$(CURDIR)/$(COMPAT)/share/jupyter $(COMPAT)/bin/python -m pytest -p no:cacheprovider \
		-o addopts="--nbval-lax --nbval-current-env" tests/test_runtime.py book/environment.ipynb

clean:
	rm -rf _build build .pytest_cache .coverage
