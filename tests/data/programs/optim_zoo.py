import torch
import torch.nn as nn

torch.manual_seed(45)
X = torch.randn(40, 5)
w_true = torch.tensor([1.5, -2.0, 0.5, 0.0, 3.0])
y = X @ w_true + 0.1 * torch.randn(40)


def run(make_opt, make_sched=None, steps=6):
    torch.manual_seed(0)
    model = nn.Linear(5, 1)
    opt = make_opt(model.parameters())
    sched = make_sched(opt) if make_sched else None
    for _ in range(steps):
        loss = ((model(X).squeeze(1) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
    lr = opt.param_groups[0]['lr']
    return f"{loss.item():.6f} lr={lr:.6g}"


print('sgd', run(lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3),
                 lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 4], gamma=0.5)))
print('rprop', run(lambda p: torch.optim.Rprop(p, lr=0.01, etas=(0.4, 1.3), step_sizes=(1e-5, 1))))
print('asgd', run(lambda p: torch.optim.ASGD(p, lr=0.05, t0=2)))
print('radam', run(lambda p: torch.optim.RAdam(p, lr=0.05, weight_decay=0.01, decoupled_weight_decay=True),
                   lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)))
print('nadam', run(lambda p: torch.optim.NAdam(p, lr=0.05, momentum_decay=4e-3, decoupled_weight_decay=True,
                                               weight_decay=0.01)))
print('adamax', run(lambda p: torch.optim.Adamax(p, lr=0.05),
                    lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=5, power=2.0)))
print('adagrad', run(lambda p: torch.optim.Adagrad(p, lr=0.1),
                     lambda o: torch.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                                 cycle_momentum=False)))
print('rmsprop', run(lambda p: torch.optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5),
                     lambda o: torch.optim.lr_scheduler.ChainedScheduler(
                         [torch.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2),
                          torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.95)])))
print('adamw', run(lambda p: torch.optim.AdamW(p, lr=0.05, amsgrad=True, maximize=False, foreach=False),
                   lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=6, eta_min=0.001)))
print('adam-capturable', run(lambda p: torch.optim.Adam(p, lr=torch.tensor(0.05), betas=(0.8, 0.9))))
model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
extra = nn.Parameter(torch.zeros(3))
opt.add_param_group({'params': [extra], 'lr': 0.01, 'momentum': 0.5})
print(len(opt.param_groups), opt.param_groups[1]['momentum'], opt.param_groups[0]['momentum'])
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[0.5, 0.05], total_steps=10, anneal_strategy='linear')
lrs = []
for _ in range(10):
    opt.step()
    sched.step()
    lrs.append(round(opt.param_groups[0]['lr'], 5))
print(lrs)
print(sched.state_dict()['_step_count'], type(opt.state_dict()['param_groups'][1]['params'][0]).__name__)
