"""PaddleOCR's CRNN recognizers written out with ``paddle.nn`` layers (runs inside .venv-paddle).

PaddleOCR's wheels carry no modeling code, so the modules are transcribed here from PaddleOCR 2.7's sources, with
their module names, layer types and forward code, so that ``state_dict()`` holds PaddleOCR's own names (among them
``nn.LSTM``'s two names for every weight, ``neck.encoder.lstm.weight_ih_l0`` and
``neck.encoder.lstm.0.cell_fw.weight_ih``):

- ``ppocr/modeling/backbones/det_mobilenet_v3.py``: ``ConvBNLayer``, ``ResidualUnit``, ``SEModule``,
  ``make_divisible``;
- ``ppocr/modeling/backbones/rec_mobilenet_v3.py``: ``MobileNetV3`` (recognition strides);
- ``ppocr/modeling/backbones/rec_resnet_vd.py``: ``ResNet`` (vd, basic blocks ``bb_<stage>_<block>``);
- ``ppocr/modeling/necks/rnn.py``: ``Im2Seq``, ``EncoderWithRNN``, ``SequenceEncoder``;
- ``ppocr/modeling/heads/rec_ctc_head.py``: ``CTCHead``;
- ``ppocr/modeling/architectures/base_model.py``: ``BaseModel`` (``backbone``, ``neck``, ``head``).

Training-only details that do not change a name or an eval output (``ParamAttr`` names and L2 decay) are left out;
``nn.BatchNorm`` is given the default dtype (PaddleOCR leaves its float32 default) so that the parity script can
build a float64 copy.
"""

from __future__ import annotations

import paddle
import paddle.nn.functional as F
from paddle import nn


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class MV3ConvBNLayer(nn.Layer):
    """det_mobilenet_v3.py ``ConvBNLayer``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups=1, if_act=True, act=None):
        super().__init__()
        self.if_act, self.act = if_act, act
        self.conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride=stride, padding=padding, groups=groups,
                              bias_attr=False)
        self.bn = nn.BatchNorm(num_channels=out_channels, act=None, dtype=paddle.get_default_dtype())

    def forward(self, x):
        x = self.bn(self.conv(x))
        if self.if_act:
            if self.act == "relu":
                x = F.relu(x)
            elif self.act == "hardswish":
                x = F.hardswish(x)
            else:
                raise ValueError(f"the activation {self.act} is not supported")
        return x


class SEModule(nn.Layer):
    def __init__(self, in_channels, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2D(1)
        self.conv1 = nn.Conv2D(in_channels, in_channels // reduction, 1, 1, 0)
        self.conv2 = nn.Conv2D(in_channels // reduction, in_channels, 1, 1, 0)

    def forward(self, inputs):
        outputs = F.relu(self.conv1(self.avg_pool(inputs)))
        outputs = F.hardsigmoid(self.conv2(outputs), slope=0.2, offset=0.5)
        return inputs * outputs


class ResidualUnit(nn.Layer):
    def __init__(self, in_channels, mid_channels, out_channels, kernel_size, stride, use_se, act=None):
        super().__init__()
        self.if_shortcut = stride == 1 and in_channels == out_channels
        self.if_se = use_se
        self.expand_conv = MV3ConvBNLayer(in_channels, mid_channels, 1, 1, 0, if_act=True, act=act)
        self.bottleneck_conv = MV3ConvBNLayer(mid_channels, mid_channels, kernel_size, stride,
                                              int((kernel_size - 1) // 2), groups=mid_channels, if_act=True, act=act)
        if self.if_se:
            self.mid_se = SEModule(mid_channels)
        self.linear_conv = MV3ConvBNLayer(mid_channels, out_channels, 1, 1, 0, if_act=False, act=None)

    def forward(self, inputs):
        x = self.bottleneck_conv(self.expand_conv(inputs))
        if self.if_se:
            x = self.mid_se(x)
        x = self.linear_conv(x)
        if self.if_shortcut:
            x = paddle.add(inputs, x)
        return x


class MobileNetV3(nn.Layer):
    """rec_mobilenet_v3.py ``MobileNetV3``."""

    def __init__(self, in_channels=3, model_name="small", scale=0.5, large_stride=None, small_stride=None,
                 disable_se=False):
        super().__init__()
        self.disable_se = disable_se
        small_stride = small_stride or [2, 2, 2, 2]
        large_stride = large_stride or [1, 2, 2, 2]
        if model_name == "large":
            cfg = [
                # k, exp, c, se, nl, s
                [3, 16, 16, False, "relu", large_stride[0]],
                [3, 64, 24, False, "relu", (large_stride[1], 1)],
                [3, 72, 24, False, "relu", 1],
                [5, 72, 40, True, "relu", (large_stride[2], 1)],
                [5, 120, 40, True, "relu", 1],
                [5, 120, 40, True, "relu", 1],
                [3, 240, 80, False, "hardswish", 1],
                [3, 200, 80, False, "hardswish", 1],
                [3, 184, 80, False, "hardswish", 1],
                [3, 184, 80, False, "hardswish", 1],
                [3, 480, 112, True, "hardswish", 1],
                [3, 672, 112, True, "hardswish", 1],
                [5, 672, 160, True, "hardswish", (large_stride[3], 1)],
                [5, 960, 160, True, "hardswish", 1],
                [5, 960, 160, True, "hardswish", 1],
            ]
            cls_ch_squeeze = 960
        elif model_name == "small":
            cfg = [
                [3, 16, 16, True, "relu", (small_stride[0], 1)],
                [3, 72, 24, False, "relu", (small_stride[1], 1)],
                [3, 88, 24, False, "relu", 1],
                [5, 96, 40, True, "hardswish", (small_stride[2], 1)],
                [5, 240, 40, True, "hardswish", 1],
                [5, 240, 40, True, "hardswish", 1],
                [5, 120, 48, True, "hardswish", 1],
                [5, 144, 48, True, "hardswish", 1],
                [5, 288, 96, True, "hardswish", (small_stride[3], 1)],
                [5, 576, 96, True, "hardswish", 1],
                [5, 576, 96, True, "hardswish", 1],
            ]
            cls_ch_squeeze = 576
        else:
            raise NotImplementedError(f"mode[{model_name}_model] is not implemented!")
        inplanes = 16
        self.conv1 = MV3ConvBNLayer(in_channels, make_divisible(inplanes * scale), 3, 2, 1, groups=1, if_act=True,
                                    act="hardswish")
        block_list = []
        inplanes = make_divisible(inplanes * scale)
        for k, exp, c, se, nl, s in cfg:
            se = se and not self.disable_se
            block_list.append(ResidualUnit(inplanes, make_divisible(scale * exp), make_divisible(scale * c), k, s,
                                           use_se=se, act=nl))
            inplanes = make_divisible(scale * c)
        self.blocks = nn.Sequential(*block_list)
        self.conv2 = MV3ConvBNLayer(inplanes, make_divisible(scale * cls_ch_squeeze), 1, 1, 0, groups=1, if_act=True,
                                    act="hardswish")
        self.pool = nn.MaxPool2D(kernel_size=2, stride=2, padding=0)
        self.out_channels = make_divisible(scale * cls_ch_squeeze)

    def forward(self, x):
        return self.pool(self.conv2(self.blocks(self.conv1(x))))


class VdConvBNLayer(nn.Layer):
    """rec_resnet_vd.py ``ConvBNLayer`` (the average-pool shortcut of vd mode, Paddle's exclusive ceil pool)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, groups=1, is_vd_mode=False, act=None):
        super().__init__()
        self.is_vd_mode = is_vd_mode
        self._pool2d_avg = nn.AvgPool2D(kernel_size=stride, stride=stride, padding=0, ceil_mode=True)
        self._conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride=1 if is_vd_mode else stride,
                               padding=(kernel_size - 1) // 2, groups=groups, bias_attr=False)
        self._batch_norm = nn.BatchNorm(out_channels, act=act, dtype=paddle.get_default_dtype())

    def forward(self, inputs):
        if self.is_vd_mode:
            inputs = self._pool2d_avg(inputs)
        return self._batch_norm(self._conv(inputs))


class BasicBlock(nn.Layer):
    def __init__(self, in_channels, out_channels, stride, shortcut=True, if_first=False):
        super().__init__()
        self.stride = stride
        self.conv0 = VdConvBNLayer(in_channels, out_channels, 3, stride=stride, act="relu")
        self.conv1 = VdConvBNLayer(out_channels, out_channels, 3, act=None)
        if not shortcut:
            self.short = VdConvBNLayer(in_channels, out_channels, 1, stride=stride,
                                       is_vd_mode=not if_first and stride[0] != 1)
        self.shortcut = shortcut

    def forward(self, inputs):
        conv1 = self.conv1(self.conv0(inputs))
        short = inputs if self.shortcut else self.short(inputs)
        return F.relu(paddle.add(x=short, y=conv1))


class ResNet(nn.Layer):
    """rec_resnet_vd.py ``ResNet`` for 18 and 34 layers (basic blocks)."""

    def __init__(self, in_channels=3, layers=34):
        super().__init__()
        depth = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3]}[layers]
        num_channels, num_filters = [64, 64, 128, 256], [64, 128, 256, 512]
        self.conv1_1 = VdConvBNLayer(in_channels, 32, 3, stride=1, act="relu")
        self.conv1_2 = VdConvBNLayer(32, 32, 3, stride=1, act="relu")
        self.conv1_3 = VdConvBNLayer(32, 64, 3, stride=1, act="relu")
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.block_list = []
        for block in range(len(depth)):
            shortcut = False
            for i in range(depth[block]):
                stride = (2, 1) if i == 0 and block != 0 else (1, 1)
                basic_block = self.add_sublayer(
                    f"bb_{block}_{i}",
                    BasicBlock(num_channels[block] if i == 0 else num_filters[block], num_filters[block], stride,
                               shortcut=shortcut, if_first=block == i == 0))
                shortcut = True
                self.block_list.append(basic_block)
            self.out_channels = num_filters[block]
        self.out_pool = nn.MaxPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, inputs):
        y = self.pool2d_max(self.conv1_3(self.conv1_2(self.conv1_1(inputs))))
        for block in self.block_list:
            y = block(y)
        return self.out_pool(y)


class Im2Seq(nn.Layer):
    def __init__(self, in_channels):
        super().__init__()
        self.out_channels = in_channels

    def forward(self, x):
        B, C, H, W = x.shape
        assert H == 1
        x = x.squeeze(axis=2)
        return x.transpose([0, 2, 1])  # (NTC)(batch, width, channels)


class EncoderWithRNN(nn.Layer):
    def __init__(self, in_channels, hidden_size):
        super().__init__()
        self.out_channels = hidden_size * 2
        self.lstm = nn.LSTM(in_channels, hidden_size, direction="bidirectional", num_layers=2)

    def forward(self, x):
        x, _ = self.lstm(x)
        return x


class SequenceEncoder(nn.Layer):
    """rnn.py ``SequenceEncoder`` for the ``reshape`` and ``rnn`` encoders CRNN uses."""

    def __init__(self, in_channels, encoder_type, hidden_size=48):
        super().__init__()
        self.encoder_reshape = Im2Seq(in_channels)
        self.out_channels = self.encoder_reshape.out_channels
        self.encoder_type = encoder_type
        if encoder_type == "reshape":
            self.only_reshape = True
        else:
            self.encoder = {"rnn": EncoderWithRNN}[encoder_type](self.encoder_reshape.out_channels, hidden_size)
            self.out_channels = self.encoder.out_channels
            self.only_reshape = False

    def forward(self, x):
        x = self.encoder_reshape(x)
        if not self.only_reshape:
            x = self.encoder(x)
        return x


class CTCHead(nn.Layer):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.fc = nn.Linear(in_channels, out_channels)
        self.out_channels = out_channels

    def forward(self, x, targets=None):
        predicts = self.fc(x)
        if not self.training:
            predicts = F.softmax(predicts, axis=2)
        return predicts


class BaseModel(nn.Layer):
    """base_model.py ``BaseModel`` without a transform: ``backbone``, ``neck``, ``head``."""

    def __init__(self, backbone: nn.Layer, neck_hidden: int, num_classes: int):
        super().__init__()
        self.backbone = backbone
        self.neck = SequenceEncoder(backbone.out_channels, "rnn", hidden_size=neck_hidden)
        self.head = CTCHead(self.neck.out_channels, num_classes)

    def forward(self, x):
        return self.head(self.neck(self.backbone(x)))


#: the CRNN configurations, as PaddleOCR's rec configs build them
CRNN = {
    # configs/rec/rec_mv3_none_bilstm_ctc.yml: MobileNetV3 large x0.5, BiLSTM 96, ic15's 36 characters + blank
    "mv3_large": lambda: BaseModel(MobileNetV3(model_name="large", scale=0.5), 96, 37),
    # configs/rec/rec_r34_vd_none_bilstm_ctc.yml: ResNet34-vd, BiLSTM 256
    "r34_vd": lambda: BaseModel(ResNet(layers=34), 256, 37),
    # configs/rec/ch_ppocr_v2.0/rec_chinese_lite_train_v2.0.yml's network: MobileNetV3 small x0.5 with
    # small_stride [1, 2, 2, 2], BiLSTM 48 (here with ic15's classes)
    "mv3_small": lambda: BaseModel(MobileNetV3(model_name="small", scale=0.5, small_stride=[1, 2, 2, 2]), 48, 37),
}
