"""教师用评分器：``shardlab-grade``（``make grade``）在沙箱里运行学生提交的练习笔记本，只导出答案，在评分进程里判定

模块（导入单向：status → export → inject / junit / key → judge → submission → report → cli）：

- status：全部状态与中文说明；export：导出答案的代码；inject：读入提交、生成评分笔记本；
- course：课程目录（解答、练习）；key：答案表的生成、读入与核对；personal：按个人版评分的答案表、核对密钥；
- sandbox（+ redacted/）：bubblewrap / 非特权 uid 沙箱与去掉参考算法的库副本；plugin：沙箱里的 pytest 插件；
- junit：读 JUnit 报告；judge：隐藏输入与判定；submission：评一份提交；
- folder：提交目录；identify：把文件对上花名册里的学生（文件夹、文件名、Canvas / Moodle / Gradescope 的下载、笔记本里写的 id）；
- integrity：抄袭的证据（只给助教）；report：成绩册与反馈；outputs：汇总表、Canvas、summary 与助教的文件；
- gradescope：Gradescope 的 zip、容器里的评分与本机试运行；cli：命令行、线程池与进度。

评分器不 import JAX，也不 import ``shardlab.bench``。
"""
