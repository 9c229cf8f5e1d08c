"""Run the autograd code cells of the seed documents (../shared/seeds/000-004) on tgrad and print what they print.

Each cell is the seed's PyTorch code, unchanged except that its ``import torch``
lines become ``import tgrad as torch`` (``from torch... import`` likewise).
A cell runs in a fresh namespace after the cells of its seed whose state it
uses (``deps``), as in the notebook; a cell whose last statement is an
expression displays its value like IPython.  Where a seed uses names it
never defines (``device``, the training data of seed 003, ``learning_rate``),
a ``setup`` snippet marked as such defines them; a few notebook cells that
only make sense on a GPU run on the cpu (noted below).

tgrad's cpu generator is PyTorch's (mt19937 and its sampling transforms), so
a cell that seeds (``torch.manual_seed``) and draws prints the seed's numbers.
Cells that draw without seeding cannot: PyTorch seeds its generator from the
operating system at start-up.  ``check`` asserts each cell's result: the
output text exactly as the seed prints it where the seed shows it, and the
relations that hold for any random draw where the values are unseeded; the
script exits with status 1 if any cell does not match (``tests/test_seeds.py``
runs the same checks cell by cell).

    python examples/seeds.py            # all cells
    python examples/seeds.py 001        # the cells of one seed
"""
import ast
import contextlib
import io
import re
import sys
import traceback

import numpy as np


class Cell:
    """One code cell: ``key`` is "<seed>-<n>"; ``expected`` is the seed's printed text (None: values
    are random or not shown); ``needs`` lists tgrad attributes the code uses that may not exist yet."""

    def __init__(self, key, code, expected=None, needs=(), setup="", deps=(), note=""):
        self.key = key
        self.code = code
        self.expected = expected
        self.needs = tuple(needs)
        self.setup = setup
        self.deps = tuple(deps)     # earlier cells whose state this one uses
        self.note = note


CELLS = [
    # ------------------------------------------------------------------ seed 000: autograd basics, MLP
    Cell("000-1", """\
import torch

x_1 = torch.tensor(2.0, requires_grad=True)
b_1 = torch.tensor(1.0, requires_grad=True)
""", expected=""),
    Cell("000-2", """\
y_1 = x_1 ** 3 + b_1
y_1.backward()
print(y_1, x_1.grad, b_1.grad)
""", deps=('000-1',), expected="tensor(9., grad_fn=<AddBackward0>) tensor(12.) tensor(1.)\n"),
    Cell("000-3", """\
x_2 = torch.tensor(2.0, requires_grad=True)
b_2 = torch.tensor(1.0, requires_grad=True)
y_2 = x_2 ** 3 + b_2
grads = torch.autograd.grad(y_2, inputs=[x_2, b_2])
print(grads)
""", expected="(tensor(12.), tensor(1.))\n"),
    Cell("000-4", """\
a = torch.tensor([[2.0, 3.0], [4.0, 5.0]], requires_grad=True)
b = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)  # 2x2
z = a ** 2 + a * b + b ** 2
grads = torch.autograd.grad(z, inputs=[a, b], grad_outputs=torch.ones_like(z))
print(grads)
print(grads[0].shape, grads[1].shape)
""", expected="""\
(tensor([[ 5.,  8.],
        [11., 14.]]), tensor([[ 4.,  7.],
        [10., 13.]]))
torch.Size([2, 2]) torch.Size([2, 2])
"""),
    Cell("000-5", """\
x = torch.ones(5)               # input tensor
y = torch.zeros(3)              # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
""", expected="", needs=("matmul", "nn.functional.binary_cross_entropy_with_logits")),
    Cell("000-6", """\
print('Gradient function for z =', z.grad_fn)
print('Gradient function for loss =', loss.grad_fn)
""", deps=('000-5',), needs=("matmul", "nn.functional.binary_cross_entropy_with_logits")),
    Cell("000-7", """\
loss.backward()
print(w.grad)
print(b.grad)
""", deps=('000-5',), needs=("matmul", "nn.functional.binary_cross_entropy_with_logits")),
    Cell("000-8", """\
z = torch.matmul(x, w)+b
print(z.requires_grad)

with torch.no_grad():
    z = torch.matmul(x, w)+b
print(z.requires_grad)
""", deps=('000-5',), expected="True\nFalse\n", needs=("matmul",)),
    Cell("000-9", """\
z = torch.matmul(x, w)+b
z_det = z.detach()
print(z_det.requires_grad)
""", deps=('000-5',), expected="False\n", needs=("matmul",)),
    Cell("000-10", """\
from torch import nn

# 一个简单的MLP
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(8, 12)  # Hidden layer
        self.act = nn.ReLU()
        self.output = nn.Linear(12, 4)  # Output layer

    def forward(self, x):
        a = self.act(self.hidden(x))
        return self.output(a)

# 实例化MLP类得到net
net = MLP()

# 访问net的第一个隐藏层的权重和偏差
w1 = net.hidden.weight
b1 = net.hidden.bias
print(w1.shape, b1.shape)
""", expected="torch.Size([12, 8]) torch.Size([12])\n", needs=("nn.Module", "nn.Linear", "nn.ReLU")),
    Cell("000-11", """\
for name, param in net.named_parameters():
    print(name, param.shape)
""", deps=('000-10',), expected="""\
hidden.weight torch.Size([12, 8])
hidden.bias torch.Size([12])
output.weight torch.Size([4, 12])
output.bias torch.Size([4])
""", needs=("nn.Module", "nn.Linear", "nn.ReLU")),
    Cell("000-12", """\
# 访问net的第一个隐藏层的权重和偏差的梯度
w1_grad = net.hidden.weight.grad
b1_grad = net.hidden.bias.grad
print(w1_grad, b1_grad)
""", deps=('000-10',), expected="None None\n", needs=("nn.Module", "nn.Linear", "nn.ReLU")),
    Cell("000-13", """\
print(net.hidden.weight.requires_grad)
print(net.hidden.bias.requires_grad)
""", deps=('000-10',), expected="True\nTrue\n", needs=("nn.Module", "nn.Linear", "nn.ReLU")),
    Cell("000-14", """\
# 做一个假的数据集，30个样本，每个样本8维特征，4维标签
data = torch.randn(30, 8)
label = torch.randn(30, 4)

dataset = torch.utils.data.TensorDataset(data, label)
dataloder = torch.utils.data.DataLoader(dataset, batch_size=10, shuffle=True)

# 开始训练
net.train()
net.to(device)      # 可选，如果有GPU的话

# 我们只训练一个epoch即可
for index, (data, label) in enumerate(dataloder):
    data = data.to(device)
    label = label.to(device)
    out = net(data)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(out, label)
    loss.backward()
    print(f"step: {index}, loss: {loss}, weight grad for hidden layer: {net.hidden.weight.grad}")
""", deps=('000-10',), needs=("nn.Module", "nn.Linear", "nn.ReLU", "utils.data.TensorDataset",
                                   "utils.data.DataLoader", "nn.functional.binary_cross_entropy_with_logits"),
         setup="device = 'cuda' if torch.cuda.is_available() else 'cpu'\n",
         note="net.cuda() / data.cuda() / label.cuda() (\"optional, if there is a GPU\") become .to(device)"),

    # ------------------------------------------------------------------ seed 001: autograd mechanics
    Cell("001-1", """\
'''
torch的梯度计算机制有点难以理解.
no_grad与detach有异曲同工之妙，都是逃避autograd的追踪.
'''
import torch
from torch.autograd import Variable
x = Variable(torch.ones(1, 2),requires_grad=True)
print(id(x))
print('x初始值：',x)
##如果不使用no_grad，会报错
with torch.no_grad():
    x += 1 #或者调用x.add_(1) #注意add_下划线
x,print(id(x))##原地加法，x的id没变。
""", expected="""\
2531106437568
x初始值： tensor([[1., 1.]], requires_grad=True)
2531106437568
(tensor([[2., 2.]], requires_grad=True), None)
"""),
    Cell("001-2", """\
x = torch.randn(5, requires_grad=True)
y = x.pow(2)
print(x.equal(y.grad_fn._saved_self))  # True
print(x is y.grad_fn._saved_self)  # True
""", expected="True\nTrue\n"),
    Cell("001-3", """\
x = torch.randn(5, requires_grad=True)
y = x.exp()
print(y.equal(y.grad_fn._saved_result))  # True
print(y is y.grad_fn._saved_result)  # False
""", expected="True\nFalse\n"),
    Cell("001-4", """\
# Define a train function to be used in different threads
import threading
def train_fn():
    x = torch.ones(5, 5, requires_grad=True)
    # forward
    y = (x + 3) * (x + 4) * 0.5
    # backward
    y.sum().backward()
    # potential optimizer update


# User write their own threading code to drive the train_fn
threads = []
for _ in range(10):
    p = threading.Thread(target=train_fn, args=())
    p.start()
    threads.append(p)

for p in threads:
    p.join()
""", expected=""),
    Cell("001-5", """\
x=x+1
x,id(x)
""", deps=('001-3',)),
    Cell("001-6", """\
from torch.autograd import Variable
import torch
x = Variable(torch.ones(1, 2),requires_grad=True)

y = x**2##可进行非原地计算，即将x进行计算后赋给一个新变量。
c = x+1 ##假如此处换为 x = x + 1,最后结果会输出什么？
z =  y**2
z.sum().backward()##z调用了backward了为什么还无梯度？那也是计算x的梯度
print(z.grad)  ## 输出：None#
print(y.grad)  ##输出：None
print(c.grad)  ##z,y,c都无梯度
##z=y**2=x**4,因此dz/dx=4*x**3,然后将(1,1)带入，那么x的梯度就是(4,4)了
print(x.grad)  ##输出：tensor([[4., 4.]])
print(x)  ##输出：tensor([[1., 1.]], requires_grad=True
print(y)  ##：tensor([[1., 1.]], grad_fn=<PowBackward0>
print(z)  ##:输出：tensor([[1., 1.]], grad_fn=<PowBackward0>)
print(c)  ##：输出：tensor([[2., 2.]], grad_fn=<AddBackward0>)


#x.grad.zero_()
c.sum().backward()
##很显然在c上的梯度是1，但是如果不对梯度清零，则会累加[4,4]+[1,1]，那么就是[5,5]
print(x.grad)
""", expected="""\
None
None
None
tensor([[4., 4.]])
tensor([[1., 1.]], requires_grad=True)
tensor([[1., 1.]], grad_fn=<PowBackward0>)
tensor([[1., 1.]], grad_fn=<PowBackward0>)
tensor([[2., 2.]], grad_fn=<AddBackward0>)
tensor([[5., 5.]])
"""),
    Cell("001-7", """\
type(x),type(y)
""", deps=('001-6',), expected="(torch.Tensor, torch.Tensor)\n"),
    Cell("001-8", """\
'''
通过no_grad控制梯度的计算范围。
'''
from torch.autograd import Variable
import torch
x = Variable(torch.ones(1, 10),requires_grad=True)
y1 = (x)**2
y2 = (x)**2
z = y1**2 + y2**2##在y1和y2中的梯度都计算，然后相加。
z.sum().backward()
print(x.grad) ## 输出：tensor([[8., 8., 8., 8., 8., 8., 8., 8., 8., 8.]])
print(z) ##输出：tensor([[2., 2., 2., 2., 2., 2., 2., 2., 2., 2.]], grad_fn=<AddBackward0>)

x = Variable(torch.ones(1, 10),requires_grad=True)
y1 = (x)**2
with torch.no_grad():
    y2 = (x)**2
z = y1**2 + y2**2
z.sum().backward()
print(x.grad) ##输出：tensor([[4., 4., 4., 4., 4., 4., 4., 4., 4., 4.]])
print(z)##输出：tensor([[2., 2., 2., 2., 2., 2., 2., 2., 2., 2.]], grad_fn=<AddBackward0>)

x = Variable(torch.ones(1, 10),requires_grad=True)
with torch.no_grad():
    x += 1
    y2 = (x)**2##放在no_grad上下文，不计算x在y2中的梯度
y1 = (x)**2
z = y1**2 + y2**2##z函数为：x**4+x**4
z.sum().backward()##梯度为：4*x**3（x在y2**2上的梯度不计算，只计算x在y1**2上的梯度，然后作为x在z上的梯度）
print(x.grad)##输出tensor([[32., 32., 32., 32., 32., 32., 32., 32., 32., 32.]])
print(z)##输出tensor([[32., 32., 32., 32., 32., 32., 32., 32., 32., 32.]],grad_fn=<AddBackward0>)
""", expected="""\
tensor([[8., 8., 8., 8., 8., 8., 8., 8., 8., 8.]])
tensor([[2., 2., 2., 2., 2., 2., 2., 2., 2., 2.]], grad_fn=<AddBackward0>)
tensor([[4., 4., 4., 4., 4., 4., 4., 4., 4., 4.]])
tensor([[2., 2., 2., 2., 2., 2., 2., 2., 2., 2.]], grad_fn=<AddBackward0>)
tensor([[32., 32., 32., 32., 32., 32., 32., 32., 32., 32.]])
tensor([[32., 32., 32., 32., 32., 32., 32., 32., 32., 32.]],
       grad_fn=<AddBackward0>)
"""),
    Cell("001-9", """\
'''
注意原地操作（更新tensor）之前不能用到相应tensor，如果用到，后面求梯度就不对之前用到的tensor进行求导。
这个例子是对前面那个例子的简单修改
'''
from torch.autograd import Variable
import torch
x = Variable(torch.ones(1, 10),requires_grad=True)
y1 = (x)**2##已经定义了y1
with torch.no_grad():
    x += 1#但是此处对x进行原地操作，那么y1就无法求梯度了
    y2 = (x)**2

z = y1**2 + y2**2
#print(x.requires_grad,x.is_leaf)
x.requires_grad_(True)
##这里会报错，报错内容见后面，因为在定义了y1之后，又对x进行原地操作
##因而对x求梯度，就会报错。
z.sum().backward()
print(x.grad)
print(z)
""", expected="RuntimeError: one of the variables needed for gradient computation has been modified by an "
              "inplace operation: [torch.FloatTensor [1, 10]] is at version 1; expected version 0 instead. Hint: "
              "enable anomaly detection to find the operation that failed to compute its gradient, with "
              "torch.autograd.set_detect_anomaly(True).\n"),
    Cell("001-10", """\
'''
多次求梯度，梯度会保存累加
'''
from torch.autograd import Variable
import torch
x = Variable(torch.ones(1, 2),requires_grad=True)
x.sum().backward()
print(x.grad)  #输出：tensor([[1., 1.]])
x.sum().backward()
print(x.grad)#输出：tensor([[2., 2.]])
x.sum().backward()
print(x.grad)#输出：tensor([[3., 3.]])
""", expected="tensor([[1., 1.]])\ntensor([[2., 2.]])\ntensor([[3., 3.]])\n"),
    Cell("001-11", """\
x = Variable(torch.ones(1, 2),requires_grad=True)
x.sum().backward()
print(x.grad)  #输出：tensor([[1., 1.]])
x.grad.zero_()##上一次的梯度归零
x.sum().backward()
print(x.grad)#输出：tensor([[2., 2.]])
x.grad.zero_()##上一次的梯度归零
x.sum().backward()
print(x.grad)#输出：tensor([[3., 3.]])
""", deps=("001-10",), expected="tensor([[1., 1.]])\ntensor([[1., 1.]])\ntensor([[1., 1.]])\n"),
    Cell("001-12", """\
x.data=x.data+1
""", deps=('001-10', '001-11'), expected=""),
    Cell("001-13", """\
x.sum()
""", deps=('001-10', '001-11', '001-12'), expected="tensor(4., grad_fn=<SumBackward0>)\n"),
    Cell("001-14", """\
'''
一个变量有5个属性，要求这个变量可以求梯度，需要满足2个属性为真，
requires_grad=True，is_leaf=True。
在声明变量的时候声明requires_grad=True就可以了。
在实践过程中如果发现梯度没法计算，要查一下这两个属性。

'''
x.requires_grad,x.is_leaf
""", deps=('001-10', '001-11', '001-12'), expected="(True, True)\n"),
    Cell("001-15", """\
##z不是叶子tensor，所以不能计算梯度
z.requires_grad,z.is_leaf
""", deps=('001-9',), expected="(True, False)\n"),
    Cell("001-16", """\
'''
x 是一个（2,3）的矩阵，设置为可导，是叶节点，即leaf variable
y 也是一个（2,3）的矩阵，即
y=x2+x (x的平方加x)
实际上，就是要y的各个元素对相对应的x求导
'''

x = torch.tensor([[1.,2.,3.],[4.,5.,6.]],requires_grad=True)
y = torch.add(torch.pow(x,2),x)
print(y)
gradient=torch.tensor([[1.0,1.0,1.0],[1.0,1.0,1.0]])

y.backward(gradient)##2x+1

print('------------------\\n',x.grad)
""", expected="""\
tensor([[ 2.,  6., 12.],
        [20., 30., 42.]], grad_fn=<AddBackward0>)
------------------
 tensor([[ 3.,  5.,  7.],
        [ 9., 11., 13.]])
"""),
    Cell("001-17", """\
##权重梯度下降
x = torch.tensor([1.,2.,3.],requires_grad=True)
y = torch.pow(x,2)
gradient=torch.tensor([1.0,0.1,0.001])
y.backward(gradient)
print(x.grad)
""", expected="tensor([2.0000, 0.4000, 0.0060])\n"),
    Cell("001-18", """\
x = torch.tensor(5.0,requires_grad=True)
y = torch.pow(x,3)

grad_x = torch.autograd.grad(y, x, create_graph=True)
print(grad_x) # dy/dx = 3 * x2，即75

grad_grad_x = torch.autograd.grad(grad_x[0],x)
print(grad_grad_x) # 二阶导数 d(2x)/dx = 30
""", expected="(tensor(75., grad_fn=<MulBackward0>),)\n(tensor(30.),)\n"),

    # ------------------------------------------------------------------ seed 002: the Exp Function (an image)
    Cell("002-1", """\
import torch

class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result

x = torch.tensor([0.0, 1.0], requires_grad=True)
y = Exp.apply(x)
y.sum().backward()
print(y)
print(x.grad)
""", expected="tensor([1.0000, 2.7183], grad_fn=<ExpBackward>)\ntensor([1.0000, 2.7183])\n",
         note="the seed shows this Function as an image; the code is the one it depicts (PyTorch's docs' Exp)"),

    # ------------------------------------------------------------------ seed 003: the graph by hand
    Cell("003-1", """\
import torch
torch.manual_seed(6)
x = torch.randn(4, 4, requires_grad=True)
y = torch.randn(4, 4, requires_grad=True)
z = x * y
l = z.sum()
l.backward()
print(x.grad)
print(y.grad)
""", expected="""\
tensor([[-1.4801, -1.0631,  0.3630,  0.3995],
        [ 0.1457, -0.7345, -0.9873,  1.8512],
        [-1.3437,  0.8535,  0.8811, -0.6522],
        [ 0.5810,  0.3561,  0.0160,  0.4019]])
tensor([[-1.2113,  0.6304, -1.4713, -1.3352],
        [-0.4897,  0.1317,  0.3295,  0.3264],
        [-0.4806,  1.1032,  2.5485,  0.3006],
        [-0.5432, -1.0841,  1.4612, -1.6279]])
"""),
    Cell("003-2", """\
torch.manual_seed(6)
x = torch.randn((4, 4), requires_grad=True)
y = torch.randn((4, 4), requires_grad=True)
z = x * y
l = z.sum()

dl = torch.tensor(1.)

back_sum = l.grad_fn
dz = back_sum(dl)
back_mul = back_sum.next_functions[0][0]
dx, dy = back_mul(dz)
back_x = back_mul.next_functions[0][0]
back_x(dx)
back_y = back_mul.next_functions[1][0]
back_y(dy)
print(x.grad)
print(y.grad)
""", expected="""\
tensor([[-1.4801, -1.0631,  0.3630,  0.3995],
        [ 0.1457, -0.7345, -0.9873,  1.8512],
        [-1.3437,  0.8535,  0.8811, -0.6522],
        [ 0.5810,  0.3561,  0.0160,  0.4019]], grad_fn=<CopyBackwards>)
tensor([[-1.2113,  0.6304, -1.4713, -1.3352],
        [-0.4897,  0.1317,  0.3295,  0.3264],
        [-0.4806,  1.1032,  2.5485,  0.3006],
        [-0.5432, -1.0841,  1.4612, -1.6279]], grad_fn=<CopyBackwards>)
"""),
    Cell("003-3", """\
b = torch.randn(1, requires_grad=True,
                dtype=torch.float, device=device)
w = torch.randn(1, requires_grad=True,
                dtype=torch.float, device=device)
""", expected="", setup="device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"),
    Cell("003-4", """\
# Sets learning rate - this is "eta" ~ the "n"-like Greek letter
lr = 0.1

# Step 0 - Initializes parameters "b" and "w" randomly
torch.manual_seed(42)
b = torch.randn(1, requires_grad=True, \\
                dtype=torch.float, device=device)
w = torch.randn(1, requires_grad=True, \\
                dtype=torch.float, device=device)

# Defines number of epochs
n_epochs = 1000

for epoch in range(n_epochs):
    # Step 1 - Computes model's predicted output - forward pass
    yhat = b + w * x_train_tensor

    # Step 2 - Computes the loss
    # We are using ALL data points, so this is BATCH gradient
    # descent. How wrong is our model? That's the error!
    error = (yhat - y_train_tensor)
    # It is a regression, so it computes mean squared error (MSE)
    loss = (error ** 2).mean()

    # Step 3 - Computes gradients for both "b" and "w" parameters
    loss.backward()

    # 暂时关闭梯度，从而在不影响计算图的情况下更新参数
    with torch.no_grad():
        b -= lr * b.grad
        w -= lr * w.grad

    b.grad.zero_()
    w.grad.zero_()

print(b, w)
""", setup="""\
# setup (not in the seed): the training data of the tutorial the seed quotes
import numpy as np
from torch import optim
device = 'cuda' if torch.cuda.is_available() else 'cpu'
np.random.seed(42)
x = np.random.rand(100, 1)
y = 1 + 2 * x + .1 * np.random.randn(100, 1)
idx = np.arange(100)
np.random.shuffle(idx)
x_train, y_train = x[idx[:80]], y[idx[:80]]
x_train_tensor = torch.as_tensor(x_train).float().to(device)
y_train_tensor = torch.as_tensor(y_train).float().to(device)
"""),
    Cell("003-5", """\
# Sets learning rate - this is "eta" ~ the "n"-like Greek letter
lr = 0.1

# Step 0 - Initializes parameters "b" and "w" randomly
torch.manual_seed(42)
b = torch.randn(1, requires_grad=True,
                dtype=torch.float, device=device)
w = torch.randn(1, requires_grad=True,
                dtype=torch.float, device=device)

# Defines a SGD optimizer to update the parameters
optimizer = optim.SGD([b, w], lr=lr)

# Defines number of epochs
n_epochs = 1000

for epoch in range(n_epochs):
    # Step 1 - Computes model's predicted output - forward pass
    yhat = b + w * x_train_tensor

    # Step 2 - Computes the loss
    # We are using ALL data points, so this is BATCH gradient
    # descent. How wrong is our model? That's the error!
    error = (yhat - y_train_tensor)
    # It is a regression, so it computes mean squared error (MSE)
    loss = (error ** 2).mean()

    # Step 3 - Computes gradients for both "b" and "w" parameters
    loss.backward()

    # Step 4 - Updates parameters using gradients and
    # the learning rate. No more manual update!
    # with torch.no_grad():
    #     b -= lr * b.grad
    #     w -= lr * w.grad
    optimizer.step()

    # No more telling Pytorch to let gradients go!
    # b.grad.zero_()
    # w.grad.zero_()
    optimizer.zero_grad()

print(b, w)
""", needs=("optim.SGD",)),

    # ------------------------------------------------------------------ seed 004: PyTorch 101
    Cell("004-1", """\
import torch

tsr = torch.Tensor(3,5)

tsr
"""),
    Cell("004-2", """\
t1 = torch.randn((3,3), requires_grad = True)

t2 = torch.FloatTensor(3,3) # No way to specify requires_grad while initiating
t2.requires_grad = True
""", expected="", needs=("FloatTensor",)),
    Cell("004-3", """\
import torch

a = torch.randn((3,3), requires_grad = True)

w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)

b = w1*a
c = w2*a

d = w3*b + w4*c

L = 10 - d

print("The grad fn for a is", a.grad_fn)
print("The grad fn for d is", d.grad_fn)
"""),
    Cell("004-4", """\
import torch

a = torch.randn((3,3), requires_grad = True)

w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)

b = w1*a
c = w2*a

d = w3*b + w4*c

L = (10 - d)

L.backward()
""", expected="RuntimeError: grad can be implicitly created only for scalar outputs\n"),
    Cell("004-5", """\
import torch

a = torch.randn((3,3), requires_grad = True)

w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)

b = w1*a
c = w2*a

d = w3*b + w4*c

# Replace L = (10 - d) by
L = (10 -d).sum()

L.backward()
""", expected=""),
    Cell("004-6", """\
a = torch.randn((3,3), requires_grad = True)

w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)

b = w1*a
c = w2*a

d = w3*b + w4*c

L = (10 - d)

# Replace L.backward() with
L.backward(torch.ones(L.shape))
""", expected="", note="the seed's one-line replacement, applied to its non-scalar L"),
    Cell("004-7", """\
w1 = w1 - learning_rate * w1.grad
""", deps=('004-5',), expected="", setup="learning_rate = 0.01  # setup (not in the seed)\n"),
    Cell("004-8", """\
a = torch.randn((3,3), requires_grad = True)   #No graph yet, as a is a leaf

w1 = torch.randn((3,3), requires_grad = True)  #Same logic as above

b = w1*a   #Graph with node `mulBackward` is created.
""", expected="", note="the seed wraps this block in stray backquotes"),
    Cell("004-9", """\
loss = (w1 * a).sum()
loss.backward(retain_graph = True)
loss.backward()
""", deps=('004-8',), expected="",
         note="the seed's one-line `loss.backward(retain_graph = True)`, with a loss to call it on"),
]

BY_KEY = {c.key: c for c in CELLS}


def tgradify(code):
    """The seed's code with its torch imports pointed at tgrad."""
    code = re.sub(r"^(\s*)import torch\s*$", r"\1import tgrad as torch", code, flags=re.M)
    return re.sub(r"^(\s*)from torch(\.|\s)", r"\1from tgrad\2", code, flags=re.M)


def missing(cell):
    """The first attribute in ``cell.needs`` that tgrad does not have yet, or None."""
    import tgrad
    for path in cell.needs:
        obj = tgrad
        for part in path.split("."):
            if not hasattr(obj, part):
                import importlib
                try:
                    obj = importlib.import_module(f"{obj.__name__}.{part}")
                    continue
                except (ImportError, AttributeError):
                    return path
            obj = getattr(obj, part)
    return None


def display(value):
    """What IPython shows for a cell's last expression (tuples element-wise, classes as module.name)."""
    if isinstance(value, tuple):
        inner = ", ".join(display(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, type):
        return value.__name__ if value.__module__ == "builtins" else f"{value.__module__}.{value.__qualname__}"
    return repr(value)


def run(key, edits=()):
    """Run cell ``key`` after the setup snippets of its seed and the cells it depends on, in a fresh
    namespace where ``torch`` is tgrad; ``edits``: (old, new) replacements in the cell's code.

    Returns (printed text of the cell, namespace, exception or None); an exception is printed as the
    notebook shows it, ``Name: message``.
    """
    import tgrad
    cell = BY_KEY[key]
    ns = {"__name__": "__seed__", "torch": tgrad}
    for c in CELLS:
        if c.key.split("-")[0] == key.split("-")[0]:
            exec(tgradify(c.setup), ns)
    for dep in cell.deps:
        try:
            _exec_cell(tgradify(BY_KEY[dep].code), ns)
        except RuntimeError:
            if not (BY_KEY[dep].expected or "").startswith("RuntimeError"):
                raise
    code = cell.code
    for a, b in edits:
        assert a in code, a
        code = code.replace(a, b)
    buf = io.StringIO()
    err = None
    with contextlib.redirect_stdout(buf):
        try:
            _exec_cell(tgradify(code), ns)
        except Exception as exc:
            err = exc
            print(f"{type(exc).__name__}: {exc}")
    return buf.getvalue(), ns, err


def _exec_cell(code, ns):
    tree = ast.parse(code)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body = tree.body[:-1]
    exec(compile(tree, "<cell>", "exec"), ns)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
        if value is not None:
            print(display(value))


# ------------------------------------------------------------------ checking a cell's result
def expected_text(cell):
    """The seed's printed text as tgrad prints it: ``torch.`` reads ``tgrad.`` in names (``tgrad.Size``)."""
    return cell.expected.replace("torch.", "tgrad.")


def _np(t):
    return t.detach().cpu().numpy()


def _same(out, want):
    assert out == want, f"printed\n{out}\ninstead of\n{want}"


def _000_5(out, ns, edits):
    z = _np(ns["w"]).sum(0) + _np(ns["b"])           # x = ones(5)
    want = np.mean(np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z))))     # bce_with_logits(z, y = 0)
    np.testing.assert_allclose(ns["loss"].item(), want, rtol=1e-5)


def _000_6(out, ns, edits):
    assert re.fullmatch(r"Gradient function for z = <AddBackward0 object at 0x[0-9a-f]+>\n"
                        r"Gradient function for loss = <BinaryCrossEntropyWithLogitsBackward0 object at "
                        r"0x[0-9a-f]+>\n", out), out


def _000_7(out, ns, edits):
    gw, gb = _np(ns["w"].grad), _np(ns["b"].grad)
    z = _np(ns["w"]).sum(0) + _np(ns["b"])
    np.testing.assert_allclose(gb, 1 / (1 + np.exp(-z)) / 3, rtol=1e-5)     # d mean(bce(z, 0)) / dz
    np.testing.assert_array_equal(gw, np.tile(gb, (5, 1)))                   # x = ones: every row is dz
    _same(out, f"{ns['w'].grad}\n{ns['b'].grad}\n")


def _000_14(out, ns, edits):
    # f"{loss}" formats the 0-d tensor's Python number, as the seed prints it ("loss: 0.7470499873161316")
    steps = re.findall(r"^step: (\d), loss: (\d\.\d+), weight grad for hidden layer: tensor\(\[\[", out, flags=re.M)
    assert [s[0] for s in steps] == ["0", "1", "2"], out
    assert tuple(ns["net"].hidden.weight.grad.shape) == (12, 8)


def _001_1(out, ns, edits):
    lines, seed = out.splitlines(), BY_KEY["001-1"].expected.splitlines()
    assert len(lines) == 4 and re.fullmatch(r"\d+", lines[0]) and lines[0] == lines[2], out   # id(x) unchanged
    assert (lines[1], lines[3]) == (seed[1], seed[3]), out


def _001_5(out, ns, edits):
    m = re.fullmatch(r"\((tensor\(\[.*\], grad_fn=<AddBackward0>\)), (\d+)\)\n", out, flags=re.S)
    assert m and int(m.group(2)) == id(ns["x"]), out
    old_x = ns["y"].grad_fn.next_functions[0][0].variable       # x of cell 001-3
    np.testing.assert_array_equal(_np(ns["x"]), _np(old_x) + np.float32(1))


def _product_grads(ns):
    x, y = ns["x"], ns["y"]
    np.testing.assert_array_equal(_np(x.grad), _np(y))
    np.testing.assert_array_equal(_np(y.grad), _np(x))


def _003_1(out, ns, edits):
    _product_grads(ns)
    _same(out, f"{ns['y'].detach()}\n{ns['x'].detach()}\n")


def _003_2(out, ns, edits):
    _product_grads(ns)
    # the same values as l.backward() gave (003-1), printed with grad_fn=<CopyBackwards> as PyTorch does
    _same(out, run("003-1")[0].replace("]])\n", "]], grad_fn=<CopyBackwards>)\n"))


def _gd_reference(ns, lr=0.1):
    """Seed 003's gradient descent on b + w x in float64 numpy, from the same initial draws."""
    import tgrad
    tgrad.manual_seed(42)
    b, w = tgrad.randn(1).item(), tgrad.randn(1).item()
    x, y = ns["x_train"][:, 0], ns["y_train"][:, 0]
    for _ in range(ns["n_epochs"]):
        err = b + w * x - y
        b, w = b - lr * 2 * err.mean(), w - lr * 2 * (err * x).mean()
    return b, w


def _003_4(out, ns, edits):
    np.testing.assert_allclose([ns["b"].item(), ns["w"].item()], _gd_reference(ns), rtol=1e-5)
    _same(out, f"{ns['b']} {ns['w']}\n")
    assert ns["b"].is_leaf and ns["b"].requires_grad and ns["b"].grad.item() == 0.0


def _003_5(out, ns, edits):
    np.testing.assert_allclose([ns["b"].item(), ns["w"].item()], _gd_reference(ns), rtol=1e-5)
    _same(out, run("003-4", edits)[0])        # optim.SGD gives the manual loop's values


def _004_1(out, ns, edits):
    import tgrad
    assert out.startswith("tensor([[") and tuple(ns["tsr"].shape) == (3, 5) and ns["tsr"].dtype is tgrad.float32


def _004_3(out, ns, edits):
    assert re.fullmatch(r"The grad fn for a is None\nThe grad fn for d is <AddBackward0 object at 0x[0-9a-f]+>\n",
                        out), out
    assert ns["a"].is_leaf and ns["a"].grad_fn is None and not ns["L"].is_leaf


def _004_5(out, ns, edits):
    a, w1, w2, w3, w4 = (_np(ns[k]) for k in ("a", "w1", "w2", "w3", "w4"))
    np.testing.assert_allclose(_np(ns["w1"].grad), -w3 * a, rtol=1e-6)
    np.testing.assert_allclose(_np(ns["w2"].grad), -w4 * a, rtol=1e-6)
    np.testing.assert_allclose(_np(ns["w3"].grad), -w1 * a, rtol=1e-6)
    np.testing.assert_allclose(_np(ns["w4"].grad), -w2 * a, rtol=1e-6)
    np.testing.assert_allclose(_np(ns["a"].grad), -(w3 * w1 + w4 * w2), rtol=1e-5)


def _004_9(out, ns, edits):
    np.testing.assert_allclose(_np(ns["w1"].grad), 2 * _np(ns["a"]), rtol=1e-6)
    try:
        ns["loss"].backward()
    except RuntimeError as exc:
        assert str(exc).startswith("Trying to backward through the graph a second time"), exc
    else:
        raise AssertionError("a third backward() of a graph freed by the second did not raise")


# Cells with unseeded random values (or ids) are checked through the relations the seed states (and 003's
# seeded ones too, besides their text); every other cell prints exactly the seed's text.
RELATIONS = {"000-5": _000_5, "000-6": _000_6, "000-7": _000_7, "000-14": _000_14, "001-1": _001_1,
             "001-5": _001_5, "003-1": _003_1, "003-2": _003_2, "003-4": _003_4, "003-5": _003_5,
             "004-1": _004_1, "004-3": _004_3, "004-5": _004_5, "004-6": _004_5, "004-9": _004_9}


def check(key, out, ns, err, edits=()):
    """Raise AssertionError unless ``run(key, edits)``'s result ``(out, ns, err)`` is what the seed shows:
    its exact text where the seed's output is deterministic, else the relations the seed states."""
    cell = BY_KEY[key]
    if err is not None and not (cell.expected or "").startswith(type(err).__name__ + ": "):
        raise AssertionError(f"raised {type(err).__name__}: {err}")
    if cell.expected is not None and key != "001-1":        # 001-1 prints id(x), which differs per run
        _same(out, expected_text(cell))
    if key in RELATIONS:
        RELATIONS[key](out, ns, edits)
    elif cell.expected is None:
        raise AssertionError("no expected text and no relation to check")


def main(argv):
    import tgrad
    tgrad.set_default_device("cpu")
    seeds = argv[1:] or sorted({c.key.split("-")[0] for c in CELLS})
    cells = [c for c in CELLS if c.key.split("-")[0] in seeds]
    failed = []
    for cell in cells:
        print(f"---- seed {cell.key}" + (f"  ({cell.note})" if cell.note else ""))
        gone = missing(cell)
        if gone:
            print(f"tgrad.{gone} does not exist")
            failed.append(cell.key)
            continue
        out, ns, err = run(cell.key)
        print(out, end="")
        try:
            check(cell.key, out, ns, err)
        except AssertionError as exc:
            print(f"MISMATCH with seed cell {cell.key}: {exc}", file=sys.stderr)
            if err is not None:
                traceback.print_exception(err)
            failed.append(cell.key)
    if failed:
        print(f"{len(failed)} of {len(cells)} cells do not match their seeds: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"all {len(cells)} cells match their seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
