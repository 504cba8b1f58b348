"""tools/bench-age's recall benchmark: 200 facts a person tells the soul, and questions asked later.

Each pair is "what the person said | what is asked on the last day". The questions were written
apart from the facts, as someone would ask months later: other words around the one or two
that name the thing (a search can only meet words, so a question sharing none cannot be found
by any full-text index; that is a limit this benchmark states, not hides). 100 in English, 100
in Chinese.
"""

EN = """\
my sister Mia lives in Lisbon now | where has Mia been living lately?
I'm allergic to peanuts | what nuts should I stay away from because of my allergy?
my dentist appointment is on the third Thursday of every month | when do I usually see the dentist?
our cat is called Biscuit | what was the name of our cat again?
I grew up in a small town called Ravenna | which town did I grow up in?
my favourite colour is teal | do you remember my favourite colour?
I work as a nurse at St Mary's hospital | which hospital do I work at?
my brother Tom is afraid of spiders | what is Tom scared of?
I started learning the cello in January | which instrument am I learning?
my daughter's birthday is on the ninth of August | when is my daughter's birthday?
I drive an old green Volvo | what kind of car do I drive?
my grandmother taught me to bake rye bread | who taught me baking, and what bread?
I can't stand the smell of coriander | which herb do I hate the smell of?
the wifi password is on a note under the kettle | where did I put the wifi password?
my best friend from school is called Priya | what's my old school friend's name?
I ran my first marathon in Rotterdam | where was my first marathon?
I take my coffee with oat milk | how do I like my coffee?
my neighbour Mr Okafor keeps bees | which neighbour has the bees?
I broke my left wrist skiing when I was twelve | how did I break my wrist?
my mother's name is Helen | what is my mum called?
we are planning a trip to Kyoto in October | where are we travelling this autumn?
I'm reading a novel about lighthouse keepers | what's the book I'm reading about?
my landlord raised the rent by eighty euros | how much did the rent go up?
the spare key is with the florist downstairs | who has the spare key?
my son plays the trumpet in the school band | what does my son play in the band?
I don't eat pork for religious reasons | which meat do I avoid?
my blood type is O negative | what blood type am I?
I met my husband at a salsa class | where did I meet my husband?
my uncle Ravi repairs clocks | what does uncle Ravi repair?
I keep my passport in the blue folder | where is my passport kept?
I hate flying and always take the train | how do I prefer to travel?
my favourite film is Spirited Away | which film do I love most?
the plumber is coming on Friday morning | when is the plumber coming?
my old dog Pepper died last winter | what happened to Pepper?
I'm training to become a sign language interpreter | what am I training to be?
my father was a fisherman in Galway | what did my dad do for a living?
my phone number ends in 4471 | what are the last digits of my phone number?
I volunteer at the food bank on Saturdays | where do I volunteer?
my partner Sam snores terribly | who snores in our house?
I'm lactose intolerant | can I drink milk?
the garden shed leaks when it rains hard | what leaks in the garden?
my niece Clara is studying marine biology | what does Clara study?
I once met the mayor at a bakery | where did I meet the mayor?
my first job was delivering newspapers | what was my first job?
I have a scar on my chin from a bicycle fall | how did I get the scar on my chin?
my cousin Luis lives on a farm near Seville | where does Luis live?
I want to repaint the bedroom yellow | what colour will the bedroom be?
my favourite dessert is lemon tart | which dessert do I like best?
I speak some Portuguese from living in Porto | why do I speak Portuguese?
my doctor is called Dr Lindqvist | what's my doctor's name?
I'm saving money for a sailing boat | what am I saving up for?
my grandfather fought a forest fire in 1976 | what did grandad do in 1976?
I sleep badly when the moon is full | when do I sleep badly?
my friend Jonas lent me his tent | whose tent do I have?
I'm terrified of deep water | what am I afraid of?
my wedding anniversary is on the second of May | when is our anniversary?
my boss is called Mrs Adeyemi | who is my boss?
I collect old postcards of harbours | what do I collect?
the car needs new tyres before winter | what does the car need?
my sister-in-law Greta is a pilot | what does Greta do?
I broke up with Daniel in March | when did Daniel and I split?
my favourite tea is smoky lapsang | which tea do I like?
I always forget to water the basil | which plant do I forget?
my son is allergic to cats | who has the cat allergy?
I'm going to a wedding in Edinburgh next month | whose wedding, and where?
the dishwasher makes a grinding noise | what is wrong with the dishwasher?
my piano teacher retired last year | what happened to my piano teacher?
I got a parking fine outside the library | where did I get the fine?
my friend Aiko makes her own ceramics | what does Aiko make?
I used to live above a fish shop in Bristol | where did I live in Bristol?
my knee hurts when I climb stairs | when does my knee hurt?
my granddaughter's name is Luna | what is my granddaughter called?
we buried a time capsule under the apple tree | where is the time capsule?
I play chess online every evening | what game do I play in the evenings?
my mother-in-law visits every second Sunday | how often does my mother-in-law come?
I lost my wedding ring in the sea at Brighton | where did I lose my ring?
my favourite song is Moon River | which song do I love?
I quit smoking four years ago | when did I stop smoking?
my brother's band is called The Paper Kites | what's my brother's band called?
I'm vegetarian since university | how long have I been vegetarian?
the printer only works from the laptop | which computer does the printer work with?
my best friend's daughter is called Ines | what is the name of my best friend's daughter?
I want to learn to make sushi | what food do I want to learn to make?
my pension starts in September | when does my pension begin?
I have a fear of hospitals since my operation | why do I dislike hospitals?
my neighbour's dog barks at the postman | who barks at the postman?
I bought a telescope for my birthday | what did I buy for my birthday?
my aunt Rosa makes the best paella | who makes the best paella?
I usually wake up at half past five | what time do I wake up?
my favourite season is autumn | which season do I like most?
I was born during a snowstorm | what was the weather when I was born?
my friend Omar is moving to Canada | where is Omar moving?
I keep bees on the allotment | what do I keep at the allotment?
my childhood nickname was Sparrow | what did they call me as a child?
the boiler was serviced in November | when was the boiler last serviced?
I got my driving licence at forty | how old was I when I passed my driving test?
my twin sisters are called Nora and Liv | what are my sisters' names?
I'm learning Welsh with an app | which language am I learning?
my favourite painter is Vermeer | which painter do I like best?
I always sit in the window seat on buses | where do I like to sit on the bus?
"""

ZH = """\
我妹妹米娅住在里斯本 | 米娅现在住在哪个城市？
我对花生过敏 | 我对什么东西过敏？
我家的猫叫饼干 | 我们家猫叫什么名字？
我小时候在桂林长大 | 我是在哪里长大的？
我最喜欢的颜色是墨绿色 | 我最喜欢什么颜色？
我在市第一医院当护士 | 我在哪家医院工作？
我哥哥怕蜘蛛 | 我哥哥害怕什么？
我一月开始学大提琴 | 我在学什么乐器？
我女儿的生日是八月九号 | 我女儿哪天生日？
我开一辆旧的绿色吉普 | 我开的是什么车？
外婆教我做葱油饼 | 谁教我做饼的？
我受不了香菜的味道 | 我讨厌哪种菜的味道？
无线网密码写在水壶下面的纸条上 | 网络密码放在哪里了？
我中学最好的朋友叫小芳 | 我中学的好朋友叫什么？
我第一次跑马拉松是在厦门 | 我的第一个马拉松在哪里跑的？
我喝咖啡要加燕麦奶 | 我喝咖啡加什么？
邻居王叔叔养蜜蜂 | 哪个邻居养蜜蜂？
我十二岁滑雪摔断过左手腕 | 我的手腕是怎么断的？
我妈妈叫陈慧 | 我妈妈的名字是什么？
我们十月打算去京都旅行 | 我们秋天要去哪里旅行？
我在读一本关于灯塔看守人的小说 | 我在读的那本小说讲什么？
房东把房租涨了三百块 | 房租涨了多少？
备用钥匙放在楼下花店 | 备用钥匙在谁那里？
我儿子在学校乐队吹小号 | 我儿子在乐队里吹什么？
我不吃牛肉 | 我不吃哪种肉？
我的血型是O型 | 我是什么血型？
我和老公是在跳舞班认识的 | 我和老公在哪里认识的？
我舅舅会修钟表 | 舅舅会修什么？
我的护照放在蓝色文件夹里 | 护照放在哪里？
我怕坐飞机，总是坐高铁 | 我出门喜欢坐什么？
我最喜欢的电影是千与千寻 | 我最爱看哪部电影？
水管工周五上午来 | 水管工什么时候来？
我的老狗豆豆去年冬天走了 | 豆豆怎么了？
我在学手语翻译 | 我在学做什么？
我爸爸以前在舟山打鱼 | 我爸爸以前做什么工作？
我的手机尾号是4471 | 我手机号最后几位是多少？
我每周六去食物银行做义工 | 我在哪里做义工？
我对象打呼噜很厉害 | 我们家谁打呼噜？
我乳糖不耐受 | 我能喝牛奶吗？
花园的小棚子下大雨会漏水 | 花园里什么东西漏水？
我侄女在读海洋生物 | 我侄女学的是什么专业？
我第一份工作是送报纸 | 我的第一份工作是什么？
我下巴上的疤是骑自行车摔的 | 我下巴的疤是怎么来的？
我表哥住在成都郊区的农场 | 我表哥住在哪里？
我想把卧室刷成黄色 | 卧室要刷成什么颜色？
我最喜欢的甜点是柠檬挞 | 我最爱吃什么甜点？
我的医生姓林 | 我的医生姓什么？
我在攒钱买一艘帆船 | 我在攒钱买什么？
满月的时候我睡不好 | 我什么时候睡不好？
朋友老周借给我一顶帐篷 | 我手里是谁的帐篷？
我很怕深水 | 我害怕什么？
我们的结婚纪念日是五月二号 | 我们的结婚纪念日是哪天？
我的老板姓吴 | 我的老板是谁？
我收集老的港口明信片 | 我收集什么？
车子入冬前要换新轮胎 | 车子需要换什么？
我嫂子是飞行员 | 我嫂子是做什么的？
我三月和小刘分手了 | 我和小刘什么时候分的手？
我最喜欢的茶是正山小种 | 我最喜欢喝什么茶？
我老是忘了给罗勒浇水 | 我总是忘了给哪盆植物浇水？
我儿子对猫毛过敏 | 谁对猫过敏？
我下个月去杭州参加婚礼 | 我下个月去哪里参加婚礼？
洗碗机有摩擦的怪声 | 洗碗机有什么毛病？
我的钢琴老师去年退休了 | 我的钢琴老师怎么了？
我在图书馆门口被贴了罚单 | 我在哪里被贴的罚单？
朋友小林自己做陶瓷 | 小林自己做什么？
我以前住在鱼店楼上 | 我以前住在什么店的楼上？
我爬楼梯的时候膝盖疼 | 我什么时候膝盖疼？
我孙女叫月月 | 我孙女叫什么？
我们在苹果树下埋了一个时间胶囊 | 时间胶囊埋在哪里？
我每天晚上在网上下象棋 | 我晚上玩什么棋？
婆婆每隔一个星期天来 | 婆婆多久来一次？
我在海边把婚戒弄丢了 | 我的婚戒在哪里丢的？
我最喜欢的歌是月亮代表我的心 | 我最喜欢哪首歌？
我四年前戒了烟 | 我什么时候戒的烟？
我弟弟的乐队叫纸风筝 | 我弟弟的乐队叫什么？
我上大学起就吃素 | 我吃素多久了？
打印机只能连笔记本电脑 | 打印机能连哪台电脑？
我想学做寿司 | 我想学做什么菜？
我的退休金九月开始发 | 退休金什么时候开始发？
做过手术以后我就怕医院 | 我为什么怕去医院？
邻居家的狗见了邮递员就叫 | 谁见了邮递员就叫？
我生日给自己买了一台望远镜 | 我生日买了什么？
我姨妈做的红烧肉最好吃 | 谁做的红烧肉最好吃？
我一般五点半起床 | 我几点起床？
我最喜欢秋天 | 我最喜欢哪个季节？
我出生那天下大雪 | 我出生那天天气怎么样？
朋友阿明要搬去加拿大 | 阿明要搬到哪里去？
我在菜园里养了蜂 | 我在菜园里养了什么？
我小名叫麻雀 | 我小时候的小名是什么？
锅炉十一月检修过 | 锅炉上次是什么时候检修的？
我四十岁才考的驾照 | 我多大考的驾照？
我的双胞胎妹妹叫小雨和小雪 | 我的双胞胎妹妹叫什么？
我在用手机软件学粤语 | 我在学哪种方言？
我最喜欢的画家是齐白石 | 我最喜欢哪位画家？
坐公交我总坐靠窗的位子 | 坐公交我喜欢坐哪里？
我外公年轻时是木匠 | 我外公年轻时做什么？
我的生日蛋糕要芒果味的 | 我喜欢什么口味的蛋糕？
我每天早上去公园打太极 | 我早上去公园做什么？
我家阳台上种了三棵番茄 | 阳台上种的是什么？
我最怕打雷 | 我最害怕什么天气？
"""


def pairs(text: str) -> list:
    return [tuple(part.strip() for part in line.split("|")) for line in text.strip().splitlines()]


FACTS = pairs(EN) + pairs(ZH)  # [(fact, question)], 200
