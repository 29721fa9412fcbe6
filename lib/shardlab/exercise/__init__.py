"""练习系统（exercise system）：题目、答案、判定、个人版与花名册放在一处

- problems：每章的题目参数（发布版、可选值、一组参数何时仍是同一道题），以及从参数单元读出参数；
- answers：答案登记表：每个答案 id 的含义、单位、参考算法（参数的函数）与常见失误；
- judge：判定：自检（``shardlab.check``）与评分器（``shardlab.grade``）共用的唯一一条判定路径和唯一的接近规则；
- variants：个人版参数：由（教师密钥, 作业, 学生 id）确定地抽出，全班一起检查撞车（collision）并重抽；
- roster：花名册（CSV）。

导入只从下往上：roster 与 problems 不导入本包的其他模块；answers 导入 problems；judge 导入 answers；variants 导入 judge。
"""
