"""个人版练习（personal exercise notebooks）：``shardlab-assign ROSTER.csv --secret-file SECRET --out DIR``

- ``personalize``：把一组题目参数写进笔记本（参数单元里的数、题目文字里的数）；
- ``roster``：读花名册（roster）CSV，逐行检查；
- ``cli``：命令行。
"""
